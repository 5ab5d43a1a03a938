//! Releases: `.github/scripts/release.sh` (package, pin, tag, push) against a local bare
//! remote, the download script against a loopback HTTP server (a good tarball, a wrong hash,
//! a 404, a cut-off transfer), the action installing what its tag pins, cargo-binstall's
//! metadata, and the README's `uses:` pins.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{git, output_text, path_with, run_step, write_script};
use crate::common;

const TARGETS: [&str; 2] = ["aarch64-unknown-linux-musl", "x86_64-unknown-linux-musl"];
const PINS: &str = ".github/actions/diskbench/release.sha256";

/// What the loopback server answers for a path.
#[derive(Clone)]
enum Reply {
    /// 200 with these bytes.
    File(Vec<u8>),
    /// 200 announcing the whole length, then only the first half and a closed connection.
    CutOff(Vec<u8>),
    /// This status with a short body.
    Status(u16),
}

/// An HTTP/1.1 server on 127.0.0.1 answering GETs from a table (anything else: 404), one
/// connection at a time, until dropped. A path given several replies answers them in turn,
/// the last one for ever.
struct Server {
    port: u16,
    routes: Arc<Mutex<BTreeMap<String, Vec<Reply>>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes: Arc<Mutex<BTreeMap<String, Vec<Reply>>>> = Arc::default();
        let stop: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let (r, s) = (routes.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let _ = Self::answer(stream, &r);
                }
            }
        });
        Server {
            port,
            routes,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn serve(&self, path: &str, replies: Vec<Reply>) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.to_string(), replies);
    }

    fn answer(
        mut stream: TcpStream,
        routes: &Mutex<BTreeMap<String, Vec<Reply>>>,
    ) -> std::io::Result<()> {
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            request.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&request);
        let path = text.split_whitespace().nth(1).unwrap_or("").to_string();
        let reply = routes.lock().unwrap().get_mut(&path).and_then(|replies| {
            if replies.len() > 1 {
                Some(replies.remove(0))
            } else {
                replies.first().cloned()
            }
        });
        match reply {
            Some(Reply::File(body)) => {
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )?;
                stream.write_all(&body)?;
            }
            Some(Reply::CutOff(body)) => {
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )?;
                stream.write_all(&body[..body.len() / 2])?;
            }
            Some(Reply::Status(code)) => {
                let body = b"Service Unavailable";
                write!(
                    stream,
                    "HTTP/1.1 {code} Error\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )?;
                stream.write_all(body)?;
            }
            None => {
                let body = b"Not Found";
                write!(
                    stream,
                    "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )?;
                stream.write_all(body)?;
            }
        }
        stream.flush()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn tarball(version: &str, target: &str) -> String {
    format!("cargo-diskbench-{target}-v{version}.tar.gz")
}

/// A stand-in for the released binary: a script that answers `diskbench --version` as the
/// tool does.
fn fake_tool(dir: &Path, version: &str) -> PathBuf {
    let path = dir.join(format!("fake-tool-{version}"));
    write_script(
        &path,
        &format!(
            "#!/bin/sh\nif [ \"$1 $2\" = \"diskbench --version\" ]; then echo \"cargo-diskbench {version}\"; fi\n"
        ),
    );
    path
}

/// A repository as the release workflow's publish job has it: a bare `origin`, a clone at
/// main with the workspace version, the action's folder and the download script.
struct ReleaseRepo {
    tmp: tempfile::TempDir,
    origin: PathBuf,
    work: PathBuf,
}

impl ReleaseRepo {
    fn new(version: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let origin = tmp.path().join("origin.git");
        fs::create_dir_all(&origin).unwrap();
        git(&origin, &["init", "--quiet", "--bare"]);
        git(
            tmp.path(),
            &["clone", "--quiet", origin.to_str().unwrap(), "work"],
        );
        let work = tmp.path().join("work");
        let repo = ReleaseRepo { tmp, origin, work };
        repo.set_version(version);
        let real = common::repo_root();
        for rel in [
            ".github/actions/diskbench/action.yml",
            ".github/scripts/install-release.sh",
        ] {
            fs::create_dir_all(repo.work.join(rel).parent().unwrap()).unwrap();
            fs::copy(real.join(rel), repo.work.join(rel)).unwrap();
        }
        fs::write(repo.work.join("README.md"), "# cargo-diskbench\n").unwrap();
        git(&repo.work, &["add", "-A"]);
        git(&repo.work, &["commit", "--quiet", "-m", "code"]);
        git(
            &repo.work,
            &["push", "--quiet", "origin", "HEAD:refs/heads/main"],
        );
        repo
    }

    fn set_version(&self, version: &str) {
        fs::write(
            self.work.join("Cargo.toml"),
            format!(
                "[workspace]\nmembers = [\"cargo-diskbench\"]\n\n[workspace.package]\nversion = \"{version}\"\nedition = \"2024\"\n"
            ),
        )
        .unwrap();
    }

    /// release.sh with `args`, in the clone, with `env`.
    fn release(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
        self.release_in(&self.work, args, env)
    }

    /// release.sh with `args`, in `dir` (a clone of origin), with `env`.
    fn release_in(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(common::repo_root().join(".github/scripts/release.sh"))
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("SOURCE_DATE_EPOCH", "1764547200")
            .env_remove("RELEASE_PUSH_TOKEN")
            .env_remove("RELEASE_DOWNLOAD_URL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (out.status.code().unwrap_or(-1), output_text(&out))
    }

    /// Both targets' tarballs of `version` in `dist`, from the fake tool.
    fn package(&self, version: &str, dist: &Path) {
        let tool = fake_tool(self.tmp.path(), version);
        for target in TARGETS {
            let (code, text) = self.release(
                &[
                    "package",
                    version,
                    target,
                    tool.to_str().unwrap(),
                    dist.to_str().unwrap(),
                ],
                &[],
            );
            assert_eq!(code, 0, "{text}");
            assert!(text.contains(&tarball(version, target)), "{text}");
        }
    }

    fn head(&self) -> String {
        git(&self.work, &["rev-parse", "HEAD"]).trim().to_string()
    }
}

pub(super) fn sha256(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

/// The release job: the tarballs packaged (the same bytes every time), their SHA-256 pinned
/// in the action's folder in a commit of its own on top of the one that was built, that
/// commit tagged and the tag pushed (main untouched); the next release carries the earlier
/// pins, so the action at one tag can install an older version.
#[test]
fn a_release_pins_its_tarballs_in_the_commit_its_tag_points_at() {
    let repo = ReleaseRepo::new("0.1.0");
    let dist = repo.tmp.path().join("dist");
    repo.package("0.1.0", &dist);
    // Reproducible: packaging again gives the same bytes.
    let first: Vec<String> = TARGETS
        .iter()
        .map(|t| sha256(&dist.join(tarball("0.1.0", t))))
        .collect();
    repo.package("0.1.0", &dist);
    let again: Vec<String> = TARGETS
        .iter()
        .map(|t| sha256(&dist.join(tarball("0.1.0", t))))
        .collect();
    assert_eq!(first, again);
    // The layout cargo-binstall's metadata names: one folder with the binary.
    let listing = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(dist.join(tarball("0.1.0", TARGETS[1])))
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(
        listing
            .lines()
            .any(|l| l == "cargo-diskbench-x86_64-unknown-linux-musl-v0.1.0/cargo-diskbench"),
        "{listing}"
    );

    let built = repo.head();
    let url = "http://127.0.0.1:9/releases";
    let (code, text) = repo.release(
        &["pin", "0.1.0", dist.to_str().unwrap()],
        &[("RELEASE_DOWNLOAD_URL", url)],
    );
    assert_eq!(code, 0, "{text}");
    // A commit of its own on top of the built one, holding the pins, tagged.
    assert_eq!(
        git(&repo.work, &["rev-parse", "HEAD^"]).trim(),
        built,
        "the pins commit sits on the built commit"
    );
    assert_eq!(
        git(&repo.work, &["rev-parse", "v0.1.0^{commit}"]).trim(),
        repo.head()
    );
    assert_eq!(
        git(&repo.work, &["diff", "--name-only", "HEAD^", "HEAD"]).trim(),
        PINS
    );
    let pins = fs::read_to_string(repo.work.join(PINS)).unwrap();
    assert!(pins.contains("# version: 0.1.0\n"), "{pins}");
    assert!(pins.contains(&format!("# download: {url}\n")), "{pins}");
    for (t, hash) in TARGETS.iter().zip(&first) {
        assert!(
            pins.contains(&format!("{hash}  {}\n", tarball("0.1.0", t))),
            "{pins}"
        );
    }
    // SHA256SUMS for the release page, in sha256sum's own format.
    let check = std::process::Command::new("sha256sum")
        .args(["--check", "SHA256SUMS"])
        .current_dir(&dist)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", output_text(&check));

    let (code, text) = repo.release(&["push", "0.1.0"], &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        git(&repo.origin, &["rev-parse", "v0.1.0^{commit}"]).trim(),
        repo.head()
    );
    assert_eq!(
        git(&repo.origin, &["rev-parse", "refs/heads/main"]).trim(),
        built,
        "main is not moved by a release"
    );

    // The next release, from main: its pins carry 0.1.0's.
    git(&repo.work, &["checkout", "--quiet", "-B", "main", &built]);
    repo.set_version("0.2.0");
    git(&repo.work, &["commit", "--quiet", "-am", "0.2.0"]);
    repo.package("0.2.0", &dist);
    let (code, text) = repo.release(
        &["pin", "0.2.0", dist.to_str().unwrap()],
        &[("RELEASE_DOWNLOAD_URL", url)],
    );
    assert_eq!(code, 0, "{text}");
    let pins = fs::read_to_string(repo.work.join(PINS)).unwrap();
    assert!(pins.contains("# version: 0.2.0\n"), "{pins}");
    for v in ["0.1.0", "0.2.0"] {
        for t in TARGETS {
            assert_eq!(pins.matches(&tarball(v, t)).count(), 1, "{v} {t}: {pins}");
        }
    }
}

/// Every refusal comes before anything is written: no commit, no tag, no pins file.
#[test]
fn a_release_is_refused_before_anything_is_written() {
    // (what, prepare the repository, version, exit code, the message says)
    type Prepare = fn(&ReleaseRepo, &Path);
    let cases: &[(&str, Prepare, &str, i32, &str)] = &[
        ("not X.Y.Z", |_, _| {}, "1.0", 2, "is not X.Y.Z"),
        ("a leading v", |_, _| {}, "v0.1.0", 2, "is not X.Y.Z"),
        (
            "not Cargo.toml's version",
            |_, _| {},
            "0.2.0",
            2,
            "Cargo.toml says '0.1.0'",
        ),
        (
            "a tag that exists here",
            |r, _| {
                git(&r.work, &["tag", "v0.1.0"]);
            },
            "0.1.0",
            2,
            "tag v0.1.0 exists already",
        ),
        (
            "a tag that exists at origin",
            |r, _| {
                git(
                    &r.work,
                    &["push", "--quiet", "origin", "HEAD:refs/tags/v0.1.0"],
                );
            },
            "0.1.0",
            2,
            "exists at origin already",
        ),
        (
            "a missing target",
            |_, dist| {
                fs::remove_file(dist.join(tarball("0.1.0", TARGETS[0]))).unwrap();
            },
            "0.1.0",
            2,
            "is missing: every target is released together",
        ),
        (
            "an unreachable origin",
            |r, _| {
                let gone = r.tmp.path().join("gone.git");
                git(
                    &r.work,
                    &["remote", "set-url", "origin", gone.to_str().unwrap()],
                );
            },
            "0.1.0",
            1,
            "cannot ask origin for its tags (git ls-remote exit 128)",
        ),
    ];
    for (what, prepare, version, code, needle) in cases {
        let repo = ReleaseRepo::new("0.1.0");
        let dist = repo.tmp.path().join("dist");
        repo.package("0.1.0", &dist);
        prepare(&repo, &dist);
        let head = repo.head();
        let tags = git(&repo.work, &["tag"]);
        let (got, text) = repo.release(
            &["pin", version, dist.to_str().unwrap()],
            &[("RELEASE_DOWNLOAD_URL", "http://127.0.0.1:9")],
        );
        assert_eq!(got, *code, "{what}: {text}");
        assert!(text.contains(needle), "{what}: {text}");
        assert_eq!(repo.head(), head, "{what}: a commit was made");
        assert_eq!(git(&repo.work, &["tag"]), tags, "{what}: a tag was made");
        assert!(!repo.work.join(PINS).exists(), "{what}: pins written");
    }
}

/// A tag the release workflow did not make (pushed by hand: its commit pins nothing) is
/// refused by name with what to do; so are pins of another version and tarballs that are not
/// the pinned ones.
#[test]
fn a_tag_pushed_by_hand_is_refused_by_name() {
    let repo = ReleaseRepo::new("0.1.0");
    git(&repo.work, &["tag", "v0.1.0"]);
    let (code, text) = repo.release(&["check-tag", "v0.1.0"], &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("was not made by the release workflow"),
        "{text}"
    );
    assert!(text.contains("git push origin :refs/tags/v0.1.0"), "{text}");
    assert!(text.contains("run the release workflow"), "{text}");
    for bad in ["0.1", "main"] {
        let (code, text) = repo.release(&["check-tag", bad], &[]);
        assert_eq!(code, 2, "{bad}: {text}");
    }

    // Made by the workflow: passes; checked against other tarballs: refused.
    let repo = ReleaseRepo::new("0.1.0");
    let dist = repo.tmp.path().join("dist");
    repo.package("0.1.0", &dist);
    let (code, text) = repo.release(
        &["pin", "0.1.0", dist.to_str().unwrap()],
        &[("RELEASE_DOWNLOAD_URL", "http://127.0.0.1:9")],
    );
    assert_eq!(code, 0, "{text}");
    let (code, text) = repo.release(&["check-tag", "v0.1.0", dist.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{text}");
    fs::write(dist.join(tarball("0.1.0", TARGETS[1])), "tampered").unwrap();
    let (code, text) = repo.release(&["check-tag", "v0.1.0", dist.to_str().unwrap()], &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("the tag pins"), "{text}");
    // A pins file naming another version.
    let pins = fs::read_to_string(repo.work.join(PINS)).unwrap();
    fs::write(
        repo.work.join(PINS),
        pins.replace("# version: 0.1.0", "# version: 0.0.9"),
    )
    .unwrap();
    git(&repo.work, &["commit", "--quiet", "-am", "edit the pins"]);
    git(&repo.work, &["tag", "-f", "v0.1.0"]);
    let (code, text) = repo.release(&["check-tag", "v0.1.0"], &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("names version '0.0.9', not 0.1.0"), "{text}");
}

/// A stand-in for `gh release` (view, create, upload, edit) keeping releases as folders under
/// `store`: `<tag>/` holds the assets and, while a draft, `.draft`. `create` refuses a tag
/// origin does not have (as `--verify-tag` does); with FAKE_GH_FAIL=create it stops after the
/// first asset, as an upload cut off does.
fn fake_gh(bin: &Path) {
    write_script(
        &bin.join("gh"),
        r#"#!/bin/bash
set -eu
[ "$1" = release ] || exit 64
cmd="$2"; tag="$3"; shift 3
files=(); json=""; draft=""
while [ $# -gt 0 ]; do
  case "$1" in
    --repo | --title | --notes-file | --jq) shift 2 ;;
    --json) json="$2"; shift 2 ;;
    --draft) draft=true; shift ;;
    --draft=false) draft=false; shift ;;
    --verify-tag | --clobber) shift ;;
    *) files+=("$1"); shift ;;
  esac
done
rel="$FAKE_GH_STORE/$tag"
echo "gh release $cmd $tag" >> "$FAKE_GH_STORE/log"
case "$cmd" in
  view)
    [ -d "$rel" ] || { echo "release not found" >&2; exit 1; }
    if [ "$json" = isDraft ]; then if [ -e "$rel/.draft" ]; then echo true; else echo false; fi; else ls "$rel"; fi ;;
  create)
    git ls-remote --exit-code origin "refs/tags/$tag" >/dev/null || { echo "tag $tag is not at origin" >&2; exit 1; }
    [ ! -d "$rel" ] || { echo "a release with the same tag name already exists" >&2; exit 1; }
    mkdir -p "$rel"
    if [ "$draft" = true ]; then touch "$rel/.draft"; fi
    for f in "${files[@]}"; do
      cp "$f" "$rel/"
      if [ "${FAKE_GH_FAIL:-}" = create ]; then echo "HTTP 502: upload failed" >&2; exit 1; fi
    done ;;
  upload) [ -d "$rel" ] || exit 1; for f in "${files[@]}"; do cp "$f" "$rel/"; done ;;
  edit) [ -d "$rel" ] || exit 1; if [ "$draft" = false ]; then rm -f "$rel/.draft"; fi ;;
  *) exit 64 ;;
esac
"#,
    );
}

/// A release whose publish step fails after the tag was pushed (the draft got one asset) is
/// finished by a rerun of the publish job, in a fresh clone as "Re-run failed jobs" gives it,
/// with the build artifacts of the first attempt: the same tag at the same commit, every asset
/// uploaded, the release published; the pins commit is on the branch release/vX.Y.Z at
/// origin (pushed again if a tag of an earlier script lacks it). Rebuilt tarballs that differ
/// from the pinned ones are refused with what to do, and a rerun after success changes
/// nothing.
#[test]
fn a_release_that_failed_after_the_tag_push_completes_on_rerun() {
    let repo = ReleaseRepo::new("0.1.0");
    let dist = repo.tmp.path().join("dist");
    repo.package("0.1.0", &dist);
    let bin = repo.tmp.path().join("fake-bin");
    fake_gh(&bin);
    let store = repo.tmp.path().join("releases");
    fs::create_dir_all(&store).unwrap();
    let path = path_with(&bin);
    let store_s = store.display().to_string();
    let dist_s = dist.to_str().unwrap();
    let env = |fail: &'static str| -> Vec<(&'static str, String)> {
        vec![
            ("RELEASE_DOWNLOAD_URL", "http://127.0.0.1:9/releases".into()),
            ("GITHUB_REPOSITORY", "owner/repo".into()),
            ("GITHUB_RUN_ID", "42".into()),
            ("PATH", path.clone()),
            ("FAKE_GH_STORE", store_s.clone()),
            ("FAKE_GH_FAIL", fail.into()),
        ]
    };
    let run = |dir: &Path, args: &[&str], fail: &'static str| {
        let env = env(fail);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        repo.release_in(dir, args, &env)
    };
    // The first attempt: pinned, tagged, pushed; the release fails after one asset.
    for phase in [&["pin", "0.1.0", dist_s][..], &["push", "0.1.0"][..]] {
        let (code, text) = run(&repo.work, phase, "");
        assert_eq!(code, 0, "{phase:?}: {text}");
    }
    let (code, text) = run(&repo.work, &["publish", "0.1.0", dist_s], "create");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("re-run this job"), "{text}");
    let tagged = git(&repo.origin, &["rev-parse", "v0.1.0^{commit}"]);
    let release = store.join("v0.1.0");
    assert!(
        release.join(".draft").exists(),
        "the failed attempt left no draft"
    );
    // A tag pushed by an earlier release script had no branch: the rerun adds it.
    git(
        &repo.origin,
        &["update-ref", "-d", "refs/heads/release/v0.1.0"],
    );

    // The rerun: a fresh checkout of the default branch with its tags, the same tarballs.
    git(
        repo.tmp.path(),
        &["clone", "--quiet", repo.origin.to_str().unwrap(), "rerun"],
    );
    let rerun = repo.tmp.path().join("rerun");
    let (code, text) = run(&rerun, &["check", "0.1.0"], "");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("this run finishes that release"), "{text}");
    for phase in [
        &["pin", "0.1.0", dist_s][..],
        &["push", "0.1.0"][..],
        &["publish", "0.1.0", dist_s][..],
    ] {
        let (code, text) = run(&rerun, phase, "");
        assert_eq!(code, 0, "{phase:?}: {text}");
    }
    assert_eq!(
        git(&repo.origin, &["rev-parse", "v0.1.0^{commit}"]),
        tagged,
        "the tag moved"
    );
    assert_eq!(
        git(&repo.origin, &["rev-parse", "refs/heads/release/v0.1.0"]),
        tagged,
        "the pins commit is on no branch"
    );
    assert!(
        git(
            &repo.origin,
            &["branch", "--contains", tagged.trim(), "--format=%(refname)"]
        )
        .contains("refs/heads/release/v0.1.0")
    );
    assert!(!release.join(".draft").exists(), "still a draft");
    let mut assets: Vec<String> = fs::read_dir(&release)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assets.sort();
    let mut expected: Vec<String> = TARGETS.iter().map(|t| tarball("0.1.0", t)).collect();
    expected.push("SHA256SUMS".into());
    expected.sort();
    assert_eq!(assets, expected);
    for name in &expected {
        assert_eq!(
            fs::read(release.join(name)).unwrap(),
            fs::read(dist.join(name)).unwrap(),
            "{name}"
        );
    }

    // Done: another rerun changes nothing.
    let (code, text) = run(&rerun, &["publish", "0.1.0", dist_s], "");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("published with every asset already"),
        "{text}"
    );
    assert_eq!(
        fs::read_to_string(store.join("log"))
            .unwrap()
            .matches("gh release create")
            .count(),
        1,
        "the release was made twice"
    );

    // Rebuilt tarballs are not the pinned ones: refused, nothing moves.
    fs::write(dist.join(tarball("0.1.0", TARGETS[0])), "built again").unwrap();
    let (code, text) = run(&rerun, &["pin", "0.1.0", dist_s], "");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("pins other tarballs than these"), "{text}");
    assert!(text.contains("re-run the failed jobs"), "{text}");
    assert_eq!(git(&repo.origin, &["rev-parse", "v0.1.0^{commit}"]), tagged);
}

/// A pins file for `version` with `download` as the download location and the real hashes of
/// the tarballs in `dist`.
fn pins_for(dist: &Path, version: &str, download: &str) -> String {
    let mut text = format!("# version: {version}\n# download: {download}\n");
    for t in TARGETS {
        text.push_str(&format!(
            "{}  {}\n",
            sha256(&dist.join(tarball(version, t))),
            tarball(version, t)
        ));
    }
    text
}

/// install-release.sh against a loopback server: the pinned tarball installs and runs; a
/// wrong hash, a 404, a cut-off transfer, a short file, a version not pinned, an architecture
/// without a release and a plain-HTTP address that is not loopback are each refused by name,
/// and nothing is installed.
#[test]
fn the_download_is_checked_against_the_pinned_hash() {
    let repo = ReleaseRepo::new("0.1.0");
    let dist = repo.tmp.path().join("dist");
    repo.package("0.1.0", &dist);
    let target = match std::env::consts::ARCH {
        "aarch64" => TARGETS[0],
        _ => TARGETS[1],
    };
    let good = fs::read(dist.join(tarball("0.1.0", target))).unwrap();
    let other_arch = fs::read(dist.join(tarball(
        "0.1.0",
        if target == TARGETS[0] {
            TARGETS[1]
        } else {
            TARGETS[0]
        },
    )))
    .unwrap();
    let route = format!("/releases/v0.1.0/{}", tarball("0.1.0", target));
    let fake_uname = repo.tmp.path().join("riscv");
    write_script(
        &fake_uname.join("uname"),
        "#!/bin/sh\n[ \"$1\" = -m ] && echo riscv64 || exec /usr/bin/uname \"$@\"\n",
    );
    // (what, reply at the tarball's address, version asked, download location, PATH dir,
    //  exit code, the message says)
    type Case<'a> = (
        &'a str,
        Vec<Reply>,
        &'a str,
        Option<&'a str>,
        Option<&'a Path>,
        i32,
        &'a str,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "the pinned tarball",
            vec![Reply::File(good.clone())],
            "0.1.0",
            None,
            None,
            0,
            "installed cargo-diskbench 0.1.0",
        ),
        (
            "v-prefixed version",
            vec![Reply::File(good.clone())],
            "v0.1.0",
            None,
            None,
            0,
            "as pinned",
        ),
        (
            "a wrong hash",
            vec![Reply::File(other_arch)],
            "0.1.0",
            None,
            None,
            1,
            "SHA-256 mismatch for",
        ),
        (
            "a 404",
            vec![],
            "0.1.0",
            None,
            None,
            1,
            "HTTP 404. Is release v0.1.0 published with that asset?",
        ),
        (
            "a cut-off transfer",
            vec![Reply::CutOff(good.clone())],
            "0.1.0",
            None,
            None,
            1,
            "the transfer was cut off before the end",
        ),
        (
            "a cut-off transfer, then the whole file",
            vec![Reply::CutOff(good.clone()), Reply::File(good.clone())],
            "0.1.0",
            None,
            None,
            0,
            "attempt 1 of 3 failed (curl exit 18",
        ),
        (
            "a server error every time",
            vec![Reply::Status(503)],
            "0.1.0",
            None,
            None,
            1,
            "the server answered HTTP 503 after 3 attempt(s), an error on its side, not a missing asset",
        ),
        (
            "a server error, then the file",
            vec![Reply::Status(502), Reply::File(good.clone())],
            "0.1.0",
            None,
            None,
            0,
            "installed cargo-diskbench 0.1.0",
        ),
        (
            "a short file",
            vec![Reply::File(good[..good.len() / 2].to_vec())],
            "0.1.0",
            None,
            None,
            1,
            "SHA-256 mismatch",
        ),
        (
            "a version not pinned",
            vec![Reply::File(good.clone())],
            "0.2.0",
            None,
            None,
            2,
            "pins no SHA-256 for cargo-diskbench-",
        ),
        (
            "no release for riscv64",
            vec![Reply::File(good.clone())],
            "0.1.0",
            None,
            Some(&fake_uname),
            2,
            "no release binary for this machine's architecture (riscv64)",
        ),
        (
            "plain HTTP elsewhere",
            vec![Reply::File(good.clone())],
            "0.1.0",
            Some("http://example.invalid/releases"),
            None,
            1,
            "cannot download",
        ),
    ];
    for (what, reply, version, download, path_dir, code, needle) in cases {
        let server = Server::start();
        if !reply.is_empty() {
            server.serve(&route, reply);
        }
        let download = download
            .map(String::from)
            .unwrap_or_else(|| format!("{}/releases", server.url()));
        let pins = repo.tmp.path().join("pins.sha256");
        fs::write(&pins, pins_for(&dist, "0.1.0", &download)).unwrap();
        let dest = repo
            .tmp
            .path()
            .join(format!("dest-{}", what.replace(' ', "-")));
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(common::repo_root().join(".github/scripts/install-release.sh"))
            .arg(&pins)
            .arg(version)
            .arg(&dest)
            .env("RETRY_DELAY_S", "0")
            .env("RUNNER_TEMP", repo.tmp.path());
        if let Some(dir) = path_dir {
            cmd.env("PATH", path_with(dir));
        }
        let out = cmd.output().unwrap();
        let text = output_text(&out);
        assert_eq!(out.status.code(), Some(code), "{what}: {text}");
        assert!(text.contains(needle), "{what}: {text}");
        // A server's failure is never worded as a missing release.
        if what.contains("server error") {
            assert!(!text.contains("Is release"), "{what}: {text}");
        }
        let bin = dest.join("bin/cargo-diskbench");
        if code == 0 {
            let said = std::process::Command::new(&bin)
                .args(["diskbench", "--version"])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&said.stdout).trim(),
                "cargo-diskbench 0.1.0"
            );
        } else {
            assert!(
                text.contains("::error title=cargo-diskbench::"),
                "{what}: {text}"
            );
            assert!(!bin.exists(), "{what}: installed anyway");
            assert!(!dest.join("bin/cargo-diskbench.new").exists(), "{what}");
        }
        // Nothing of the download is left in the temp folder.
        assert!(
            !fs::read_dir(repo.tmp.path()).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("cargo-diskbench-download.")),
            "{what}: the download folder is left"
        );
    }
}

/// From release to runner: the release scripts tag a commit pinning the tarballs, the action's
/// own steps at that tag (a clone of the tag, as `uses: owner/repo/...@v0.1.0` fetches it) say
/// they install the release and install it from the loopback server, checked.
#[test]
fn the_action_at_a_release_tag_installs_the_binary_it_pins() {
    let repo = ReleaseRepo::new("0.1.0");
    let dist = repo.tmp.path().join("dist");
    repo.package("0.1.0", &dist);
    let server = Server::start();
    let (code, text) = repo.release(
        &["pin", "0.1.0", dist.to_str().unwrap()],
        &[(
            "RELEASE_DOWNLOAD_URL",
            &format!("{}/download", server.url()),
        )],
    );
    assert_eq!(code, 0, "{text}");
    let (code, text) = repo.release(&["push", "0.1.0"], &[]);
    assert_eq!(code, 0, "{text}");
    for t in TARGETS {
        server.serve(
            &format!("/download/v0.1.0/{}", tarball("0.1.0", t)),
            vec![Reply::File(
                fs::read(dist.join(tarball("0.1.0", t))).unwrap(),
            )],
        );
    }
    git(
        repo.tmp.path(),
        &[
            "clone",
            "--quiet",
            "--branch",
            "v0.1.0",
            repo.origin.to_str().unwrap(),
            "action-at-tag",
        ],
    );
    let action_dir = repo
        .tmp
        .path()
        .join("action-at-tag/.github/actions/diskbench");
    let arch = if std::env::consts::ARCH == "aarch64" {
        "ARM64"
    } else {
        "X64"
    };
    let runner_temp = repo.tmp.path().join("runner-temp");
    fs::create_dir_all(&runner_temp).unwrap();
    // A step of the action as it is at the tag, run as the runner runs it.
    let action_step = |id: &str, env: &[(&str, &str)]| {
        let mut all = vec![("GITHUB_ACTION_PATH", action_dir.to_str().unwrap())];
        all.extend_from_slice(env);
        run_step(
            "actions/diskbench/action.yml",
            id,
            "bash",
            repo.tmp.path(),
            &all,
        )
    };
    let plan = action_step(
        "plan",
        &[
            ("INPUT_VERSION", ""),
            ("RUNNER_OS", "Linux"),
            ("RUNNER_ARCH", arch),
        ],
    );
    assert_eq!(plan.code, 0, "{}", plan.text);
    assert_eq!(plan.outputs["mode"], "release", "{}", plan.text);
    assert_eq!(plan.outputs["version"], "0.1.0");
    // The install step as the action runs it: steps off, so no cargo is needed.
    let github_path = repo.tmp.path().join("github-path");
    let install = action_step(
        "install",
        &[
            ("MODE", "release"),
            ("VERSION", "0.1.0"),
            ("SRC", ""),
            ("CACHE_HIT", ""),
            ("INSTALL_ONLY", "false"),
            ("INPUT_STEPS", "false"),
            ("RUNNER_TEMP", runner_temp.to_str().unwrap()),
            ("GITHUB_PATH", github_path.to_str().unwrap()),
        ],
    );
    assert_eq!(install.code, 0, "{}", install.text);
    assert!(install.text.contains("as pinned"), "{}", install.text);
    let bin = PathBuf::from(&install.outputs["bin"]);
    assert!(bin.starts_with(&runner_temp), "{bin:?}");
    let said = std::process::Command::new(&bin)
        .args(["diskbench", "--version"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&said.stdout).trim(),
        "cargo-diskbench 0.1.0"
    );
    assert_eq!(
        fs::read_to_string(&github_path).unwrap().trim(),
        bin.parent().unwrap().display().to_string()
    );
}

/// `cargo binstall cargo-diskbench` finds the release: Cargo.toml's binstall templates,
/// expanded for each target (and for the glibc targets, which use the musl tarballs), name
/// the tarballs the release script makes and the binary's path inside them.
#[test]
fn binstall_metadata_names_the_release_tarballs() {
    let root = common::repo_root();
    let manifest = fs::read_to_string(root.join("cargo-diskbench/Cargo.toml")).unwrap();
    let workspace = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let repository = workspace
        .lines()
        .find_map(|l| l.strip_prefix("repository = \""))
        .and_then(|r| r.strip_suffix('"'))
        .expect("repository in [workspace.package]");
    assert!(manifest.contains("repository.workspace = true"));
    // The binstall sections: (table name) -> key -> template.
    let mut tables: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current = None;
    for line in manifest.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name
                .starts_with("package.metadata.binstall")
                .then(|| name.to_string());
            continue;
        }
        if let (Some(table), Some((k, v))) = (&current, line.split_once(" = ")) {
            tables
                .entry(table.clone())
                .or_default()
                .insert(k.trim().to_string(), v.trim().trim_matches('"').to_string());
        }
    }
    let base = tables
        .get("package.metadata.binstall")
        .expect("[package.metadata.binstall]")
        .clone();
    assert_eq!(base["pkg-fmt"], "tgz");
    let expand = |template: &str, target: &str| {
        template
            .replace("{ repo }", repository)
            .replace("{ version }", "0.3.1")
            .replace("{ name }", "cargo-diskbench")
            .replace("{ target }", target)
            .replace("{ bin }", "cargo-diskbench")
            .replace("{ binary-ext }", "")
    };
    for (target, tarball_target) in [
        ("x86_64-unknown-linux-musl", "x86_64-unknown-linux-musl"),
        ("aarch64-unknown-linux-musl", "aarch64-unknown-linux-musl"),
        ("x86_64-unknown-linux-gnu", "x86_64-unknown-linux-musl"),
        ("aarch64-unknown-linux-gnu", "aarch64-unknown-linux-musl"),
    ] {
        let mut keys = base.clone();
        if let Some(over) = tables.get(&format!("package.metadata.binstall.overrides.{target}")) {
            keys.extend(over.clone());
        }
        assert_eq!(
            expand(&keys["pkg-url"], target),
            format!(
                "{repository}/releases/download/v0.3.1/{}",
                tarball("0.3.1", tarball_target)
            ),
            "{target}"
        );
        assert_eq!(
            expand(&keys["bin-dir"], target),
            format!("cargo-diskbench-{tarball_target}-v0.3.1/cargo-diskbench"),
            "{target}"
        );
    }
}

/// The README's (and the site's, and docs') `uses: .../diskbench@REF` lines resolve on the day
/// they are read: REF is `main`, a full commit SHA, or a tag this repository has; and the
/// snippets leave `label` to detection.
#[test]
fn every_diskbench_pin_in_the_docs_resolves() {
    let root = common::repo_root();
    let tags = std::process::Command::new("git")
        .args(["tag", "--list"])
        .current_dir(&root)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let tags: Vec<&str> = tags.lines().collect();
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "content"] {
        files.extend(
            common::tree::files(&root.join(dir))
                .into_iter()
                .filter(|p| p.extension().is_some_and(|x| x == "md")),
        );
    }
    let mut seen = 0;
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(at) = line.find("/diskbench@") else {
                continue;
            };
            if !line[..at].contains("uses:") {
                continue;
            }
            let reference: String = line[at + "/diskbench@".len()..]
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '`')
                .collect();
            let is_sha = reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit());
            assert!(
                reference == "main" || is_sha || tags.contains(&reference.as_str()),
                "{}:{}: @{reference} resolves to nothing (tags here: {tags:?}); use @main or a commit SHA until the release exists",
                file.display(),
                i + 1
            );
            // The step's own `with:` (the lines indented deeper below it) names no label.
            let indent = line.len() - line.trim_start().len();
            for below in lines[i + 1..]
                .iter()
                .take_while(|l| l.len() - l.trim_start().len() > indent || l.trim().is_empty())
                .take_while(|l| !l.trim_start().starts_with("```"))
            {
                assert!(
                    !below.contains("label:"),
                    "{}:{}: the snippet hard-codes a label: {below}",
                    file.display(),
                    i + 1
                );
            }
            assert!(
                !line.contains("label:"),
                "{}:{}: {line}",
                file.display(),
                i + 1
            );
            seen += 1;
        }
    }
    assert!(seen >= 2, "only {seen} pins found in {} files", files.len());
}
