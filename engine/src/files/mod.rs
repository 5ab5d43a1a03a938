//! Test files, from folder to first I/O: the private scratch folder and its space check,
//! direct I/O's alignment rules, opening (O_DIRECT or the buffered fallback), and preparing
//! each file the way fio does before it is measured.

pub(crate) mod direct_io;
pub mod prep;
pub mod testfile;
