//! Names of a partition's offset-keyed files, as Kafka names them: the offset padded to 20
//! digits, then a suffix (`00000000000000000042.log`, `.index`, `.timeindex`, `.snapshot`),
//! possibly followed by a deletion or cleaning suffix (`.log.deleted`). The one place that
//! builds and parses them: the loader, the producer snapshots and dump-log use it.

use std::path::{Path, PathBuf};

pub const LOG_SUFFIX: &str = ".log";
pub const INDEX_SUFFIX: &str = ".index";
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";
/// Suffixes Kafka appends to a whole file name during deletion and cleaning.
pub const DELETED_SUFFIX: &str = ".deleted";
pub const CLEANED_SUFFIX: &str = ".cleaned";
pub const SWAP_SUFFIX: &str = ".swap";

const DIGITS: usize = 20;

/// File name of an offset-keyed file: the offset padded to 20 digits plus the suffix.
pub fn segment_file_name(offset: i64, suffix: &str) -> String {
    assert!(offset >= 0, "offset {offset} names no file");
    format!("{offset:0DIGITS$}{suffix}")
}

pub fn segment_path(dir: &Path, offset: i64, suffix: &str) -> PathBuf {
    dir.join(segment_file_name(offset, suffix))
}

/// The offset and the rest of a name made by `segment_file_name` (`"42", ".log.deleted"`
/// gives `(42, ".log.deleted")`); `None` for any other name.
pub fn parse_file_name(name: &str) -> Option<(i64, &str)> {
    let (digits, rest) = name.split_at_checked(DIGITS)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || !rest.starts_with('.') {
        return None;
    }
    Some((digits.parse().ok()?, rest))
}

/// The offset of a name that is exactly `<offset><suffix>`.
pub fn offset_of(name: &str, suffix: &str) -> Option<i64> {
    parse_file_name(name)
        .filter(|&(_, rest)| rest == suffix)
        .map(|(offset, _)| offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_refused() {
        let name = segment_file_name(42, LOG_SUFFIX);
        assert_eq!(name, "00000000000000000042.log");
        assert_eq!(offset_of(&name, LOG_SUFFIX), Some(42));
        assert_eq!(offset_of(&name, INDEX_SUFFIX), None);
        assert_eq!(
            parse_file_name("00000000000000000042.log.deleted"),
            Some((42, ".log.deleted"))
        );
        for stranger in [
            "42.log",
            "0000000000000000004x.log",
            "00000000000000000042log",
            "99999999999999999999.log",
            "",
            "é",
        ] {
            assert_eq!(parse_file_name(stranger), None, "{stranger}");
        }
    }
}
