//! Keeps FORMAT.md and the code from drifting: the batch header table in FORMAT.md is parsed
//! and compared with the constants the codec uses.

#[cfg(test)]
mod tests {
    use crate::format::batch::*;

    #[test]
    fn format_doc_matches_code() {
        let doc = include_str!("../../FORMAT.md");
        let section = doc
            .split("### Batch header (61 bytes)")
            .nth(1)
            .expect("FORMAT.md has the batch header table");
        let expected: &[(&str, usize, usize)] = &[
            ("baseOffset", BASE_OFFSET_AT, 8),
            ("batchLength", LENGTH_AT, 4),
            ("partitionLeaderEpoch", LEADER_EPOCH_AT, 4),
            ("magic", MAGIC_AT, 1),
            ("crc", CRC_AT, 4),
            ("attributes", ATTRIBUTES_AT, 2),
            ("lastOffsetDelta", LAST_OFFSET_DELTA_AT, 4),
            ("baseTimestamp", BASE_TIMESTAMP_AT, 8),
            ("maxTimestamp", MAX_TIMESTAMP_AT, 8),
            ("producerId", PRODUCER_ID_AT, 8),
            ("producerEpoch", PRODUCER_EPOCH_AT, 2),
            ("baseSequence", BASE_SEQUENCE_AT, 4),
            ("recordsCount", RECORDS_COUNT_AT, 4),
        ];
        for &(name, at, size) in expected {
            let row = section
                .lines()
                .find(|l| l.split('|').nth(3).map(str::trim) == Some(name))
                .unwrap_or_else(|| panic!("FORMAT.md lacks a row for {name}"));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            assert_eq!(cells[1].parse::<usize>().unwrap(), at, "{name} offset");
            assert_eq!(cells[2].parse::<usize>().unwrap(), size, "{name} size");
        }
        assert_eq!(RECORDS_COUNT_AT + 4, HEADER_SIZE);
        assert!(section.contains(&format!("| {HEADER_SIZE} | .. | records |")));
        assert!(doc.contains(&format!(
            "{}-byte entries, both fields",
            crate::log::offset_index::ENTRY_SIZE
        )));
        assert!(doc.contains(&format!(
            "{}-byte entries, timestamps",
            crate::log::time_index::ENTRY_SIZE
        )));
    }
}
