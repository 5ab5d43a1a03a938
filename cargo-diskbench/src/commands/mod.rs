//! One module per subcommand: its options and what it does with them.

pub mod fio;
pub mod import;
pub mod machine;
pub mod merge;
pub mod run;
pub mod site;
pub mod steps;
