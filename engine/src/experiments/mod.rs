//! Experiments that change the conditions a figure is measured under: block-I/O caps in a
//! cgroup, `--what-if` reruns of the build steps (on memory, capped), and `--like`, another
//! runner's figures as caps on this disk.

pub mod cgroup;
pub mod like;
pub mod what_if;
