//! What each fuzz target checks, as plain functions over one input. The cargo-fuzz targets
//! (`fuzz_targets/`) call them; the stable `cargo test` replays every stored input of
//! `corpus/` and `regressions/` through the same functions (`tests/engine/fuzz_corpora.rs`
//! includes this file), so a finding stays fixed without nightly.
//!
//! A check passes when it returns; a panic (or a sanitizer report) is a finding.

use std::io::Write;
use std::path::PathBuf;

use kafka_protocol::messages::{ApiKey as KafkaApi, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;
use shardlog::format::batch::{split_batches, validate, RecordsSection};
use shardlog::groups::group_records::GroupRecord;
use shardlog::groups::records::OffsetRecord;
use shardlog::kafka::ADVERTISED;
use shardlog::log::offset_index::OffsetIndex;
use shardlog::log::producer_state::ProducerState;
use shardlog::log::time_index::TimeIndex;
use shardlog::protocol::{ApiKey, Request, Response, ResponseBody, WireReader};
use shardlog::security::credentials::CredentialStore;
use shardlog::tools::dump_log::{self, DumpOptions};

/// One target's check over one input.
pub type Check = fn(&[u8]);

/// The targets by name, for the corpus replay.
pub const TARGETS: &[(&str, Check)] = &[
    ("native_request", native_request),
    ("tls_handshake", tls_handshake),
    ("native_response", native_response),
    ("record_batch", record_batch),
    ("kafka_request", kafka_request),
    ("stored_state", stored_state),
    ("index_files", index_files),
    ("dump_log", dump_log_files),
    ("sasl", sasl),
];

/// A native request frame body: header, then the body of its API (PROTOCOL.md). What
/// decodes re-encodes to a frame that decodes to the same request.
pub fn native_request(data: &[u8]) {
    let frame = bytes::Bytes::copy_from_slice(data);
    let mut r = WireReader::from_bytes(&frame);
    let Ok(header) = Request::decode_header(&mut r) else {
        return;
    };
    let Some(key) = ApiKey::from_i16(header.api_key) else {
        return;
    };
    if let Ok(request) = Request::decode_body(key, &mut r) {
        let again = request.encode_frame(header.correlation_id);
        let body = bytes::Bytes::copy_from_slice(&again[4..]);
        let mut r = WireReader::from_bytes(&body);
        Request::decode_header(&mut r).expect("a re-encoded header decodes");
        assert_eq!(
            Request::decode_body(key, &mut r).expect("re-encoded body"),
            request
        );
    }
}

/// A native response frame body as a client reads it (first two bytes: the api key it
/// answers), including the Metrics body's histograms. What decodes re-encodes to a frame
/// that decodes to the same response.
pub fn native_response(data: &[u8]) {
    let Some((key, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    let Some(key) = ApiKey::from_i16(i16::from_be_bytes(*key)) else {
        return;
    };
    let frame = bytes::Bytes::copy_from_slice(body);
    let Ok(response) = Response::decode(key, &frame) else {
        return;
    };
    if let Ok(ResponseBody::Metrics(m)) = &response.result {
        if let Ok(report) = m.report() {
            for d in &report.distributions {
                let _ = d.dist.quantile(0.99);
            }
        }
    }
    let again = response.encode_frame();
    let body = bytes::Bytes::copy_from_slice(&again[4..]);
    assert_eq!(
        Response::decode(key, &body).expect("a re-encoded response decodes"),
        response
    );
}

/// Record batches as a producer or a segment file gives them: splitting, validation, and
/// the records (decompressed for compressed batches).
pub fn record_batch(data: &[u8]) {
    if let Ok(batches) = split_batches(data) {
        for (start, h) in batches {
            let bytes = &data[start..start + h.size()];
            if let Ok(section) = RecordsSection::of(bytes, &h) {
                let _ = section.decode();
            }
        }
    }
    if let Ok((h, summary)) = validate(data) {
        assert!(summary.max_offset_delta <= i32::MAX as i64);
        assert_eq!(h.size(), data.len());
    }
}

/// A Kafka request for every API and version the Kafka listener advertises (first byte
/// picks one): the header and body decoders it runs (the kafka-protocol crate's).
pub fn kafka_request(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let versions: Vec<(KafkaApi, i16)> = ADVERTISED
        .iter()
        .flat_map(|&(k, min, max)| (min..=max).map(move |v| (k, v)))
        .collect();
    let (key, version) = versions[selector as usize % versions.len()];
    let mut buf = bytes::Bytes::copy_from_slice(rest);
    if RequestHeader::decode(&mut buf, key.request_header_version(version)).is_ok() {
        let _ = RequestKind::decode(key, &mut buf, version);
    }
}

/// Files and records shardlog reads back from disk: offsets-log records (first byte splits
/// key from value), producer snapshots, topic metadata and checkpoints.
pub fn stored_state(data: &[u8]) {
    let split = data.first().copied().unwrap_or(0) as usize;
    let rest = data.get(1..).unwrap_or_default();
    let (key, value) = rest.split_at(split.min(rest.len()));
    if let Some(r) = OffsetRecord::decode(key, (!value.is_empty()).then_some(value)) {
        let again = OffsetRecord::decode(&r.key(), r.value().as_deref());
        assert_eq!(again, Some(r));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ProducerState::decode(text);
        let _ = shardlog::catalog::topics::TopicMeta::decode_file(
            text,
            2,
            &shardlog::config::LogConfig::default(),
        );
    }
    if let Some(v) = shardlog::log::checkpoint::parse(data) {
        assert!(v >= 0);
    }
    if let Some(g) = GroupRecord::decode(key, (!value.is_empty()).then_some(value)) {
        let again = GroupRecord::decode(&g.key(), g.value().as_deref());
        assert_eq!(again, Some(g));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(store) = CredentialStore::decode(text) {
            assert_eq!(CredentialStore::decode(&store.encode()), Ok(store));
        }
    }
}

/// A SASL exchange against user `u` (password `pw`): the first byte picks the mechanism
/// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), the second where the client's first token ends;
/// the rest is the client's tokens. Nothing may panic, and no proof but the right one passes.
pub fn sasl(data: &[u8]) {
    use shardlog::security::scram::{Credential, Mechanism, ServerExchange};
    let [which, split, rest @ ..] = data else {
        return;
    };
    let (first, last) = rest.split_at((*split as usize).min(rest.len()));
    let mechanism = match which % 3 {
        0 => {
            let _ = shardlog::security::plain::authenticate(first);
            return;
        }
        1 => Mechanism::Sha256,
        _ => Mechanism::Sha512,
    };
    let salted = mechanism.salted_password(b"pw", b"fuzz-salt", 4096);
    let stored = Credential::from_salted(mechanism, &salted, b"fuzz-salt".to_vec(), 4096);
    let Ok((exchange, server_first)) = ServerExchange::start(mechanism, first, |_| Some(stored))
    else {
        return;
    };
    assert!(server_first.starts_with(b"r="));
    // A random final message carries no valid proof (the nonce is the server's, random).
    assert!(exchange.finish(last).is_err());
}

/// `.index` and `.timeindex` bytes (first byte: which, next 8: the base offset): what
/// passes the sanity checks re-encodes to the same bytes, and lookups of any target land
/// on an entry at or below it.
pub fn index_files(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let base = i64::from_be_bytes(data[1..9].try_into().expect("8 bytes")).rem_euclid(1 << 40);
    let bytes = &data[9..];
    let targets = [i64::MIN, -1, 0, base, base + 7, base + (1 << 20), i64::MAX];
    if data[0].is_multiple_of(2) {
        if let Ok(index) = OffsetIndex::decode(base, bytes, usize::MAX) {
            assert_eq!(index.encode(), bytes);
            for t in targets {
                let hit = index.lookup(t);
                assert!(hit.offset <= t.max(base));
            }
        }
    } else if let Ok(index) = TimeIndex::decode(base, bytes, usize::MAX) {
        assert_eq!(index.encode(), bytes);
        for t in targets {
            let hit = index.lookup(t);
            assert!(hit.timestamp <= t || hit.timestamp == -1);
        }
    }
}

/// dump-log on arbitrary files: the input is cut into a segment's `.log`, `.index` and
/// `.timeindex` (the second and third bytes give the cut points, in 16-byte units), and the
/// mode the first byte picks runs over them. Whatever the bytes, it reports; it never panics.
pub fn dump_log_files(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let mode = data[0] % 4;
    let rest = &data[3..];
    let a = (data[1] as usize * 16).min(rest.len());
    let b = (a + data[2] as usize * 16).min(rest.len());
    let dir = scratch_dir();
    let name = |suffix: &str| dir.join(format!("00000000000000000000.{suffix}"));
    let files = [name("log"), name("index"), name("timeindex")];
    for (path, bytes) in files.iter().zip([&rest[..a], &rest[a..b], &rest[b..]]) {
        std::fs::File::create(path)
            .and_then(|mut f| f.write_all(bytes))
            .expect("scratch file");
    }
    let opts = DumpOptions {
        files: files.to_vec(),
        deep_iteration: mode >= 1,
        print_data_log: mode == 1,
        index_sanity_check: mode == 2,
        verify_index_only: mode == 3,
        skip_record_metadata: false,
        max_message_size: 1 << 20,
        client: Default::default(),
    };
    let _ = dump_log::run(&opts, &mut std::io::sink(), &mut std::io::sink());
}

/// One directory per process for `dump_log_files`' files (tmpfs when there is one).
pub fn scratch_dir() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("shardlog-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A self-signed certificate and its key (O=shardlog fuzz, CN=localhost): the fuzzed
/// listener's keystore, and its truststore (client certificates are requested).
const FUZZ_KEYSTORE: &str = include_str!("tls_keystore.pem");

fn fuzz_tls_config() -> std::sync::Arc<rustls::ServerConfig> {
    static CONFIG: std::sync::OnceLock<std::sync::Arc<rustls::ServerConfig>> =
        std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let dir = scratch_dir();
            std::fs::create_dir_all(&dir).expect("scratch dir");
            let path = dir.join("tls_keystore.pem");
            std::fs::write(&path, FUZZ_KEYSTORE).expect("keystore");
            let settings = shardlog::net::tls::TlsSettings {
                keystore: path.clone(),
                truststore: Some(path),
                client_auth: shardlog::security::listeners::ClientAuth::Requested,
            };
            shardlog::net::tls::server_config(&settings).expect("the fuzz keystore loads")
        })
        .clone()
}

/// What a TLS listener does with a client's first bytes (first input byte: the chunk size
/// they arrive in), and the client-certificate paths: a DN read from arbitrary DER and
/// arbitrary mapping rules. Whatever the bytes, an error or a handshake in progress; never
/// a panic, and never a finished handshake (no client has the keys).
pub fn tls_handshake(data: &[u8]) {
    let [chunk, rest @ ..] = data else {
        return;
    };
    let chunk = (*chunk as usize).max(1);
    let mut conn = rustls::ServerConnection::new(fuzz_tls_config()).expect("a session");
    for mut piece in rest.chunks(chunk) {
        let fed = conn.read_tls(&mut piece).and_then(|_| {
            conn.process_new_packets()
                .map(|_| ())
                .map_err(std::io::Error::other)
        });
        if fed.is_err() {
            break;
        }
    }
    assert!(
        conn.is_handshaking(),
        "a handshake finished from random bytes"
    );
    let _ = shardlog::security::principal_mapping::subject_dn(rest);
    if let Ok(mapper) = shardlog::security::principal_mapping::PrincipalMapper::parse(
        &String::from_utf8_lossy(rest),
    ) {
        let _ = mapper.map("CN=alice,O=acme,C=US");
    }
}
