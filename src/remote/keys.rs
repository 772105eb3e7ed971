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
    format!("{:016x}", fastrand::u64(..))
}

/// `suffix` keeps its dot: `.log`, `.index`, ...
pub fn segment_file(topic: &str, partition: u32, base: i64, upload: &str, suffix: &str) -> String {
    format!("topics/{topic}/{partition}/{base:020}-{upload}{suffix}")
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
}
