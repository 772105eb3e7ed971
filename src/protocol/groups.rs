//! The native protocol's consumer-group bodies (PROTOCOL.md, keys 14-18): commits from a
//! client outside any group (the CLI's `consume --group`), committed offsets, and the
//! groups' list, description and deletion.

use bytes::Bytes;

use super::wire::{WireError, WireReader, WireWriter};
use super::ErrorCode;

/// One partition's commit: (topic, partition, offset, metadata).
pub type OffsetCommitEntry = (String, i32, i64, String);

/// A group as DescribeGroup reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupInfo {
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    /// (member id, client id, client host, assignment bytes)
    pub members: Vec<(String, String, String, Bytes)>,
}

pub fn put_commits(w: &mut WireWriter, offsets: &[OffsetCommitEntry]) {
    w.i32(offsets.len() as i32);
    for (t, p, o, m) in offsets {
        w.string(t).i32(*p).i64(*o).string(m);
    }
}

pub fn get_commits(r: &mut WireReader<'_>) -> Result<Vec<OffsetCommitEntry>, WireError> {
    let n = r.count("offset count", 16)?.unwrap_or(0);
    (0..n)
        .map(|_| {
            Ok((
                r.string("topic")?,
                r.i32("partition")?,
                r.i64("offset")?,
                r.string("metadata")?,
            ))
        })
        .collect()
}

pub fn put_codes(w: &mut WireWriter, codes: &[(String, i32, ErrorCode)]) {
    w.i32(codes.len() as i32);
    for (t, p, c) in codes {
        w.string(t).i32(*p).i16(*c as i16);
    }
}

pub fn get_codes(r: &mut WireReader<'_>) -> Result<Vec<(String, i32, ErrorCode)>, WireError> {
    let n = r.count("partition count", 8)?.unwrap_or(0);
    (0..n)
        .map(|_| {
            let t = r.string("topic")?;
            let p = r.i32("partition")?;
            let code = ErrorCode::from_i16(r.i16("error_code")?).unwrap_or(ErrorCode::Internal);
            Ok((t, p, code))
        })
        .collect()
}

pub fn put_triples(w: &mut WireWriter, rows: &[(String, String, String)]) {
    w.i32(rows.len() as i32);
    for (a, b, c) in rows {
        w.string(a).string(b).string(c);
    }
}

pub fn get_triples(r: &mut WireReader<'_>) -> Result<Vec<(String, String, String)>, WireError> {
    let n = r.count("group count", 6)?.unwrap_or(0);
    (0..n)
        .map(|_| {
            Ok((
                r.string("group")?,
                r.string("protocol type")?,
                r.string("state")?,
            ))
        })
        .collect()
}

pub fn put_group(w: &mut WireWriter, g: &GroupInfo) {
    w.string(&g.state)
        .string(&g.protocol_type)
        .string(&g.protocol);
    w.i32(g.members.len() as i32);
    for (id, client, host, assignment) in &g.members {
        w.string(id).string(client).string(host).bytes(assignment);
    }
}

pub fn get_group(r: &mut WireReader<'_>) -> Result<GroupInfo, WireError> {
    let (state, protocol_type, protocol) = (
        r.string("state")?,
        r.string("protocol type")?,
        r.string("protocol")?,
    );
    let n = r.count("member count", 10)?.unwrap_or(0);
    let members = (0..n)
        .map(|_| {
            Ok((
                r.string("member id")?,
                r.string("client id")?,
                r.string("client host")?,
                r.bytes("assignment")?,
            ))
        })
        .collect::<Result<_, WireError>>()?;
    Ok(GroupInfo {
        state,
        protocol_type,
        protocol,
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_with_the_shortest_fields_round_trip() {
        let offsets = vec![
            ("t".to_string(), 0, 7, String::new()),
            (String::new(), 1, 8, "m".into()),
        ];
        let mut w = WireWriter::frame(64);
        put_commits(&mut w, &offsets);
        let frame = w.finish_frame();
        let body = Bytes::copy_from_slice(&frame[4..]);
        let mut r = WireReader::from_bytes(&body);
        assert_eq!(get_commits(&mut r).unwrap(), offsets);
    }
}
