//! What a run leaves in the project folder, said once at the end.

use super::wrap;

/// What a run leaves in the project, said once at the end: the records folder (kept, runs
/// accumulate there) and the site (replaced on every run), and, inside a git work tree whose
/// `.gitignore` does not name them, the lines that keep them out of git.
pub fn left_in_project(
    results: &std::path::Path,
    site: Option<&std::path::Path>,
    cwd: &std::path::Path,
) -> String {
    let mut out = format!(
        "left here: {}/ (the records; every run adds one, the site is rendered from all of \
         them)",
        results.display()
    );
    if let Some(site) = site {
        out.push_str(&format!(
            " and {}/ (the report, replaced on every run; open {})",
            site.display(),
            site.join("index.html").display()
        ));
    }
    let mut text = wrap(&out, "", "  ");
    let in_git = cwd.ancestors().any(|d| d.join(".git").exists());
    let ignored = record::input::read_text(&cwd.join(".gitignore")).unwrap_or_default();
    let missing: Vec<String> = std::iter::once(results)
        .chain(site)
        .filter(|p| p.is_relative())
        .map(|p| format!("/{}/", p.display().to_string().trim_end_matches('/')))
        .filter(|line| {
            let bare = line.trim_matches('/');
            !ignored
                .lines()
                .map(|l| l.trim().trim_matches('/'))
                .any(|l| l == bare)
        })
        .collect();
    if in_git && !missing.is_empty() {
        text.push_str(&format!(
            "to keep them out of git (or commit the records to keep a history):\n  printf '{}' >> .gitignore\n",
            missing.iter().map(|m| format!("{m}\\n")).collect::<String>()
        ));
    }
    text
}

#[cfg(test)]
mod left_in_project_tests {
    use super::super::WIDTH;
    use super::*;
    use std::path::Path;

    #[test]
    fn offers_the_gitignore_lines_only_in_git_and_only_for_what_is_not_ignored() {
        let d = tempfile::tempdir().unwrap();
        let (results, site) = (Path::new("diskbench-results"), Path::new("diskbench-site"));
        let text = left_in_project(results, Some(site), d.path());
        assert!(text.contains("diskbench-results/ (the records"), "{text}");
        assert!(text.contains("diskbench-site/index.html"), "{text}");
        assert!(!text.contains(".gitignore"), "not a git work tree: {text}");

        std::fs::create_dir(d.path().join(".git")).unwrap();
        let text = left_in_project(results, Some(site), d.path());
        assert!(
            text.contains("printf '/diskbench-results/\\n/diskbench-site/\\n' >> .gitignore"),
            "{text}"
        );
        std::fs::write(d.path().join(".gitignore"), "target\ndiskbench-site/\n").unwrap();
        let text = left_in_project(results, Some(site), d.path());
        assert!(
            text.contains("printf '/diskbench-results/\\n' >> .gitignore"),
            "{text}"
        );
        std::fs::write(
            d.path().join(".gitignore"),
            "/diskbench-results\ndiskbench-site\n",
        )
        .unwrap();
        assert!(!left_in_project(results, Some(site), d.path()).contains(".gitignore"));
        // An absolute --results is not the project's business.
        let text = left_in_project(Path::new("/tmp/r"), None, d.path());
        assert!(!text.contains(".gitignore"), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
    }
}
