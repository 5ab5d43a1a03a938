//! What the site reads: records loaded and grouped into runners, stored histograms read
//! sparsely, and the files other tools write (fio JSON, CSVs of published figures) imported or
//! merged into a results folder.

pub(crate) mod csv_table;
pub(crate) mod hist;
pub mod import;
pub mod merge;
pub(crate) mod model;
pub(crate) mod published_timings;
pub mod testdata;
