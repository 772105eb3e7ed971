//! The native protocol's consumer-group bodies (PROTOCOL.md, keys 14-18): commits from a
//! client outside any group (the CLI's `consume --group`), committed offsets, and the
//! groups' list, description and deletion.

use bytes::Bytes;

use super::field::wire_struct;

/// One partition's commit: (topic, partition, offset, metadata).
pub type OffsetCommitEntry = (String, i32, i64, String);

wire_struct! {
    /// A group as DescribeGroup reports it.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GroupInfo {
        pub state: String = "state",
        pub protocol_type: String = "protocol type",
        pub protocol: String = "protocol",
        /// (member id, client id, client host, assignment bytes)
        pub members: Vec<(String, String, String, Bytes)> = "member",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::field::Field;
    use crate::protocol::wire::{WireReader, WireWriter};

    #[test]
    fn commits_with_the_shortest_fields_round_trip() {
        let offsets = vec![
            ("t".to_string(), 0, 7, String::new()),
            (String::new(), 1, 8, "m".into()),
        ];
        let mut w = WireWriter::frame(64);
        offsets.put(&mut w);
        let frame = w.finish_frame();
        let body = Bytes::copy_from_slice(&frame[4..]);
        let mut r = WireReader::from_bytes(&body);
        assert_eq!(
            Vec::<OffsetCommitEntry>::get(&mut r, "offset").unwrap(),
            offsets
        );
    }
}
