//! One module per subcommand: its options and what it does with them; `destination` is the
//! check every command makes of the places it will write.

pub mod destination;

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

/// A `--like` run killed outright leaves its latency emulation mounted with no server (every
/// access fails): unmounted before this run looks at its folders, and said.
fn unmount_killed_emulations() {
    for m in engine::experiments::like::sweep_killed_emulations() {
        eprintln!(
            "note: unmounted {}: the latency emulation of a `--like` run that was killed",
            m.display()
        );
    }
}
