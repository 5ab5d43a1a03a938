//! A run's what-if notes, said once: the notes every experiment of a run carries (the page
//! cache was dropped before each run, cgroup v1 misses the flusher's write-back) belong to the
//! run, not to each step, so the terminal and the site say them once and keep under each step
//! only what is its own.

use crate::StepResult;

/// The notes of a run's what-if experiments, split into those every experiment of the run
/// carries (`shared`, said once) and each step's own (`own`, by step index, in order).
#[derive(Debug, Default, PartialEq)]
pub struct RunNotes {
    pub shared: Vec<String>,
    /// Per step of the run (same index): the notes not in `shared`.
    pub own: Vec<Vec<String>>,
}

/// Split the notes of `steps` (one run's). With a single experiment nothing is shared: its
/// notes stay under its step, where a reader looks for them.
pub fn split(steps: &[StepResult]) -> RunNotes {
    let with: Vec<&Vec<String>> = steps
        .iter()
        .filter_map(|s| s.what_if.as_ref().map(|w| &w.notes))
        .collect();
    let mut shared: Vec<String> = Vec::new();
    if with.len() >= 2 {
        for n in with[0] {
            if !shared.contains(n) && with.iter().all(|notes| notes.contains(n)) {
                shared.push(n.clone());
            }
        }
    }
    let own = steps
        .iter()
        .map(|s| {
            s.what_if.as_ref().map_or_else(Vec::new, |w| {
                let mut own: Vec<String> = Vec::new();
                for n in &w.notes {
                    if !shared.contains(n) && !own.contains(n) {
                        own.push(n.clone());
                    }
                }
                own
            })
        })
        .collect();
    RunNotes { shared, own }
}

/// A note as short sentences for a page: split at the `; ` between clauses (outside
/// parentheses), each started with a capital and ended with a full stop. Notes are written
/// as one clause chain for the terminal's one line; on a page that is a 278-character
/// sentence.
pub fn sentences(note: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let bytes = note.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b';' if depth <= 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(note[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(note[start..].to_string());
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut s = capitalised(&p);
            if !s.ends_with(['.', '!', '?']) {
                s.push('.');
            }
            s
        })
        .collect()
}

/// The first letter in upper case, unless the first word is a name written in lower case
/// (cgroup, io_uring, tmpfs, a flag).
fn capitalised(text: &str) -> String {
    let first_word = text.split([' ', ':', ',']).next().unwrap_or("");
    const LOWER_NAMES: [&str; 8] = [
        "cgroup", "io_uring", "libaio", "psync", "tmpfs", "fio", "docker", "ramfs",
    ];
    if LOWER_NAMES.contains(&first_word) || !first_word.chars().all(|c| c.is_ascii_lowercase()) {
        return text.to_string();
    }
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StepResult, WhatIf};

    fn step(id: &str, notes: Option<&[&str]>) -> StepResult {
        StepResult {
            id: id.into(),
            what_if: notes.map(|n| WhatIf {
                notes: n.iter().map(|s| s.to_string()).collect(),
                ..WhatIf::default()
            }),
            ..StepResult::default()
        }
    }

    #[test]
    fn notes_every_experiment_carries_are_said_once_per_run() {
        let cache = "every run started with the step's own files dropped from the page cache";
        let v1 = "cgroup v1: the flusher's write-back is not attributed to the cgroup";
        let steps = [
            step("a", Some(&[cache, v1, "a's own"])),
            step("plain", None),
            step("b", Some(&[v1, cache])),
            step("c", Some(&[cache, v1, "c's own", "c's own"])),
        ];
        let n = split(&steps);
        assert_eq!(n.shared, vec![cache.to_string(), v1.to_string()]);
        assert_eq!(
            n.own,
            vec![
                vec!["a's own".to_string()],
                vec![],
                vec![],
                vec!["c's own".to_string()]
            ]
        );
        // A note only some experiments carry is each one's own.
        let n = split(&[step("a", Some(&[cache, v1])), step("b", Some(&[cache]))]);
        assert_eq!(n.shared, vec![cache.to_string()]);
        assert_eq!(n.own, vec![vec![v1.to_string()], vec![]]);
        // One experiment: its notes stay under its step.
        let n = split(&[step("a", Some(&[cache])), step("plain", None)]);
        assert!(n.shared.is_empty());
        assert_eq!(n.own[0], vec![cache.to_string()]);
    }

    #[test]
    fn a_long_note_reads_as_short_sentences() {
        let note = "every run started with the step's own files (its work folder; synced) \
                    dropped from the page cache; the toolchain and the rest of the machine \
                    stay warm";
        assert_eq!(
            sentences(note),
            vec![
                "Every run started with the step's own files (its work folder; synced) \
                 dropped from the page cache."
                    .to_string(),
                "The toolchain and the rest of the machine stay warm.".to_string(),
            ]
        );
        assert_eq!(
            sentences("cgroup v1: the caps reach reads; O_DIRECT writes too."),
            vec!["cgroup v1: the caps reach reads.", "O_DIRECT writes too."]
        );
        assert_eq!(sentences("  "), Vec::<String>::new());
        assert_eq!(sentences("Done."), vec!["Done."]);
    }
}
