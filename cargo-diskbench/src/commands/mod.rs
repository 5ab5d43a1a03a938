//! One module per subcommand: its options and what it does with them; `destination` is the
//! check every command makes of the places it will write, `outputs` where a run's record
//! and reports go, `args` the options `run` and `steps` share.

pub mod args;
pub mod destination;
pub mod outputs;

pub mod compare;
pub mod device;
pub mod fio;
pub mod import;
pub mod ioping;
pub mod machine;
pub mod merge;
pub mod run;
pub mod site;
pub mod steps;
