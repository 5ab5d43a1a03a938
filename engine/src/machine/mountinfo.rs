//! `/proc/self/mountinfo`: which filesystem holds a path.
//!
//! Format (proc(5)): `id parent major:minor root mount-point mount-options [optional...] -
//! fstype source super-options`. Paths escape space, tab, newline and backslash as octal
//! (`\040`). `root` is not "/" for bind mounts and btrfs subvolumes.

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MountEntry {
    pub major: u32,
    pub minor: u32,
    /// The directory of the source filesystem that is mounted here.
    pub root: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fstype: String,
    pub source: String,
    pub super_options: String,
}

impl MountEntry {
    /// Per-mount options followed by the filesystem's own, without repeats.
    pub(crate) fn all_options(&self) -> String {
        let mut opts: Vec<&str> = split_options(&self.mount_options);
        for o in split_options(&self.super_options) {
            if !opts.contains(&o) {
                opts.push(o);
            }
        }
        opts.join(",")
    }

    /// The value of `key=` in the super options (overlayfs `upperdir=`), unescaped.
    pub(crate) fn super_option(&self, key: &str) -> Option<String> {
        split_options(&self.super_options)
            .into_iter()
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
            .map(|v| unescape(&v.replace("\\,", ",")))
    }
}

/// Parse mountinfo text. Lines that do not parse are reported, not fatal.
pub(crate) fn parse(text: &str) -> (Vec<MountEntry>, Vec<String>) {
    let mut mounts = Vec::new();
    let mut bad = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Some(m) => mounts.push(m),
            None => bad.push(format!("mountinfo line {} does not parse: {line:?}", n + 1)),
        }
    }
    (mounts, bad)
}

fn parse_line(line: &str) -> Option<MountEntry> {
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = fields.iter().position(|f| *f == "-")?;
    if sep < 6 || fields.len() < sep + 3 {
        return None;
    }
    let (major, minor) = fields[2].split_once(':')?;
    Some(MountEntry {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        root: unescape(fields[3]),
        mount_point: unescape(fields[4]),
        mount_options: fields[5].to_string(),
        fstype: fields[sep + 1].to_string(),
        source: unescape(fields[sep + 2]),
        super_options: fields.get(sep + 3).copied().unwrap_or("").to_string(),
    })
}

/// Undo the kernel's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash).
pub(crate) fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                let value =
                    (d[0] - b'0') as u32 * 64 + (d[1] - b'0') as u32 * 8 + (d[2] - b'0') as u32;
                out.push(value as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Split on commas that are not escaped with a backslash (overlayfs escapes them in paths).
pub(crate) fn split_options(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let bytes = s.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b',' && (i == 0 || bytes[i - 1] != b'\\') {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts.retain(|p| !p.is_empty());
    parts
}

/// The mount that holds `path` (absolute, symlinks already resolved): the longest mount point
/// that is `path` or one of its parents. Of mounts stacked on one point, the last one listed
/// is the one on top.
pub(crate) fn find<'a>(mounts: &'a [MountEntry], path: &str) -> Option<&'a MountEntry> {
    let mut best: Option<&MountEntry> = None;
    for m in mounts {
        if !is_under(path, &m.mount_point) {
            continue;
        }
        if best.is_none_or(|b| m.mount_point.len() >= b.mount_point.len()) {
            best = Some(m);
        }
    }
    best
}

/// Whether `path` is `dir` or below it, comparing whole components.
pub(crate) fn is_under(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() {
        return path.starts_with('/');
    }
    path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684092k
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=1024k
42 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 master:2 - ext4 /dev/vda rw,discard
50 27 254:16 / /mnt/my\\040disk rw - xfs /dev/vdb rw,nobarrier
60 27 0:60 / /srv rw - overlay overlay rw,lowerdir=/a:/b,upperdir=/x\\,y/up,workdir=/x/work
";

    #[test]
    fn longest_prefix_wins_and_the_top_of_a_stack() {
        let (m, bad) = parse(SAMPLE);
        assert!(bad.is_empty());
        assert_eq!(find(&m, "/work/x").unwrap().mount_point, "/");
        assert_eq!(
            find(&m, "/dev/shm/a").unwrap().super_options,
            "rw,size=1024k"
        );
        assert_eq!(find(&m, "/dev/shmx").unwrap().mount_point, "/");
        let bind = find(&m, "/var/lib/docker/overlay2").unwrap();
        assert_eq!(
            (bind.root.as_str(), bind.major, bind.minor),
            ("/var/lib/docker", 254, 0)
        );
    }

    #[test]
    fn escaped_paths_and_options() {
        let (m, _) = parse(SAMPLE);
        let e = find(&m, "/mnt/my disk/f").unwrap();
        assert_eq!(e.mount_point, "/mnt/my disk");
        assert_eq!(e.all_options(), "rw,nobarrier");
        let o = find(&m, "/srv").unwrap();
        assert_eq!(o.super_option("upperdir").as_deref(), Some("/x,y/up"));
        assert_eq!(o.super_option("lowerdir").as_deref(), Some("/a:/b"));
        assert_eq!(unescape("a\\134b\\011"), "a\\b\t");
    }

    #[test]
    fn garbage_lines_are_reported_not_fatal() {
        let (m, bad) =
            parse("nonsense\n27 1 254:0 / / rw - ext4 /dev/vda rw\n1 2 x:y / / rw - a b c\n");
        assert_eq!(m.len(), 1);
        assert_eq!(bad.len(), 2);
        assert!(bad[0].contains("line 1"));
    }
}
