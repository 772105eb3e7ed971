//! Where things go in the bucket, below the store's prefix (FORMAT.md):
//! `topics/<topic>/topic.json`, `topics/<topic>/<partition>/manifest.json` and each
//! segment's files `topics/<topic>/<partition>/<base, 20 digits>-<upload id>.<suffix>`.
//! Data keys are unique per upload attempt, so a retried or resumed upload never
//! overwrites an object a manifest names.

pub fn topic_dir() -> &'static str {
    "topics"
}

pub fn topic_manifest(topic: &str) -> String {
    format!("topics/{topic}/topic.json")
}

/// Everything of one partition is below this.
pub fn partition_dir(topic: &str, partition: u32) -> String {
    format!("topics/{topic}/{partition}")
}

pub fn partition_manifest(topic: &str, partition: u32) -> String {
    format!("topics/{topic}/{partition}/manifest.json")
}

/// A fresh id for one upload attempt of a segment (random, 64 bits).
pub fn upload_id() -> String {
    let id = format!("{:016x}", fastrand::u64(..));
    assert_eq!(id.len(), 16, "an upload id is 16 hex digits");
    id
}

/// `suffix` keeps its dot: `.log`, `.index`, ...
pub fn segment_file(topic: &str, partition: u32, base: i64, upload: &str, suffix: &str) -> String {
    assert!(base >= 0, "a segment starts at an offset");
    assert!(suffix.starts_with('.'), "a suffix keeps its dot");
    let key = format!("topics/{topic}/{partition}/{base:020}-{upload}{suffix}");
    assert_eq!(
        parse_segment_file(&key).map(|(b, _, s)| (b, s)),
        Some((base, suffix)),
        "a segment key reads back"
    );
    key
}

/// A segment file's key read back: (base offset, upload id, suffix with its dot), or
/// `None` for any other key (a manifest, a stranger's object).
pub fn parse_segment_file(key: &str) -> Option<(i64, &str, &str)> {
    let name = key.rsplit('/').next()?;
    let (base, rest) = name.split_once('-')?;
    let dot = rest.find('.')?;
    let (upload, suffix) = rest.split_at(dot);
    let well_formed = base.len() == 20 && base.bytes().all(|b| b.is_ascii_digit());
    let well_formed =
        well_formed && !upload.is_empty() && upload.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed.then(|| Some((base.parse().ok()?, upload, suffix)))?
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_sort_by_offset_within_a_partition() {
        let a = super::segment_file("t", 3, 9, "ab", ".log");
        let b = super::segment_file("t", 3, 10, "00", ".log");
        assert!(a < b);
        assert_eq!(a, "topics/t/3/00000000000000000009-ab.log");
    }

    #[test]
    fn segment_keys_read_back() {
        let key = super::segment_file("t", 3, 42, "00ff", ".timeindex");
        assert_eq!(
            super::parse_segment_file(&key),
            Some((42, "00ff", ".timeindex"))
        );
        for other in [
            "topics/t/3/manifest.json",
            "topics/t/3/42-ab.log",
            "x/00000000000000000042-.log",
        ] {
            assert_eq!(super::parse_segment_file(other), None, "{other}");
        }
    }
}
