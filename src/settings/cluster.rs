//! Cluster mode's settings and their rules: etcd endpoints as `http://host:port` or
//! `https://host:port` (then with the CA to trust, and a client certificate if etcd asks
//! for one), a cluster name that is one etcd key segment, and a heartbeat well inside the
//! session timeout.

use super::{bad, SettingsError};

/// Cluster mode (`cluster.etcd.endpoints`); with no endpoints the node runs alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The etcd members that hold the cluster's state (`http://host:port` or
    /// `https://host:port`, comma-separated); empty: one node, no etcd.
    pub etcd_endpoints: String,
    /// TLS to etcd (`https://` endpoints): the CA that signed etcd's certificate, and this
    /// node's client certificate chain and key (etcd's `--client-cert-auth`), PEM files.
    pub etcd_ca_location: String,
    pub etcd_certificate_location: String,
    pub etcd_key_location: String,
    /// The etcd key prefix of this cluster (several clusters may share one etcd).
    pub name: String,
    /// This node's id in the cluster (Kafka's broker.id; node.id is an alias).
    pub broker_id: i32,
    /// This node's rack (Kafka's broker.rack; empty: none): a new partition's replicas
    /// go to as many racks as they can.
    pub rack: String,
    /// Consumers may be sent to a follower in their own rack (Kafka's
    /// replica.selector.class set to its RackAwareReplicaSelector, KIP-392); off: the
    /// leader serves every consumer that does not choose a follower itself.
    pub rack_aware_reads: bool,
    /// A node whose registration is not renewed this long is dead to the cluster (Kafka's
    /// broker.session.timeout.ms): the TTL of its etcd lease.
    pub session_timeout_ms: u64,
    /// How often a node renews its registration and refreshes its view of the cluster
    /// (Kafka's broker.heartbeat.interval.ms).
    pub heartbeat_interval_ms: u64,
    /// A follower that has not caught up with its leader's log end for this long leaves
    /// the ISR (Kafka's replica.lag.time.max.ms).
    pub replica_lag_time_max_ms: u64,
    /// The controller moves leadership back to preferred replicas when a broker's share
    /// of lost leaderships passes `leader_imbalance_per_broker_percentage` (Kafka's
    /// auto.leader.rebalance.enable, checked every leader.imbalance.check.interval.seconds).
    pub auto_leader_rebalance: bool,
    pub leader_imbalance_check_interval_s: u64,
    pub leader_imbalance_per_broker_percentage: u32,
    /// SIGTERM first moves this node's leaderships to in-sync followers (Kafka's
    /// controlled.shutdown.enable); it waits for that at most max.retries x
    /// retry.backoff.ms (Kafka's controlled.shutdown.* keys).
    pub controlled_shutdown: bool,
    pub controlled_shutdown_max_retries: u32,
    pub controlled_shutdown_retry_backoff_ms: u64,
    /// Bytes per second this node's leaders send, and its followers copy, for replicas
    /// not in sync that their topic lists as throttled (Kafka's
    /// leader/follower.replication.throttled.rate; the default is Kafka's Long.MAX_VALUE,
    /// no limit). Each shard holds its share.
    pub leader_replication_throttled_rate: u64,
    pub follower_replication_throttled_rate: u64,
    /// The replicas of `__consumer_offsets` (Kafka's offsets.topic.replication.factor);
    /// 0, the default, is min(3, live brokers) when it is created, any other value waits
    /// for that many live brokers.
    pub offsets_topic_replication_factor: u32,
    /// The same for `__transaction_state` (Kafka's
    /// transaction.state.log.replication.factor).
    pub transaction_state_log_replication_factor: u32,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings {
            etcd_endpoints: String::new(),
            etcd_ca_location: String::new(),
            etcd_certificate_location: String::new(),
            etcd_key_location: String::new(),
            name: "shardlog".to_string(),
            broker_id: 0,
            rack: String::new(),
            rack_aware_reads: false,
            session_timeout_ms: 9_000,
            heartbeat_interval_ms: 2_000,
            replica_lag_time_max_ms: 30_000,
            auto_leader_rebalance: true,
            leader_imbalance_check_interval_s: 300,
            leader_imbalance_per_broker_percentage: 10,
            controlled_shutdown: true,
            controlled_shutdown_max_retries: 3,
            controlled_shutdown_retry_backoff_ms: 5_000,
            leader_replication_throttled_rate: i64::MAX as u64,
            follower_replication_throttled_rate: i64::MAX as u64,
            offsets_topic_replication_factor: 0,
            transaction_state_log_replication_factor: 0,
        }
    }
}

/// The one replica selector Kafka ships (KIP-392), as `replica.selector.class` names it.
pub const RACK_AWARE_SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

impl ClusterSettings {
    /// How long a controlled shutdown waits for its leaderships to move.
    pub fn controlled_shutdown_bound(&self) -> std::time::Duration {
        let retries = u64::from(self.controlled_shutdown_max_retries.max(1));
        std::time::Duration::from_millis(retries * self.controlled_shutdown_retry_backoff_ms)
    }

    /// Whether cluster mode is on.
    pub fn enabled(&self) -> bool {
        !self.etcd_endpoints.is_empty()
    }

    /// `https://` endpoints need the CA to trust; a client certificate comes with its key;
    /// TLS files with `http://` endpoints would be silently unused, so they are refused.
    pub fn check_etcd_tls(&self) -> Result<(), SettingsError> {
        let tls = self.etcd_endpoints.contains("https://");
        let (ca, cert, key) = (
            &self.etcd_ca_location,
            &self.etcd_certificate_location,
            &self.etcd_key_location,
        );
        if tls && ca.is_empty() {
            return Err(bad(
                "cluster.etcd.ssl.ca.location",
                "https:// etcd endpoints need the CA that signed etcd's certificate",
            ));
        }
        if cert.is_empty() != key.is_empty() {
            return Err(bad(
                "cluster.etcd.ssl.key.location",
                "a client certificate (cluster.etcd.ssl.certificate.location) and its key come together",
            ));
        }
        let any_file = !(ca.is_empty() && cert.is_empty());
        if any_file && !tls {
            return Err(bad(
                "cluster.etcd.ssl.ca.location",
                "TLS files are set but the etcd endpoints are not https://",
            ));
        }
        Ok(())
    }

    /// In cluster mode, the heartbeat renews the lease several times per timeout, so one
    /// late renewal does not expire a live node.
    pub fn check_heartbeat(&self) -> Result<(), SettingsError> {
        let (beat, session) = (self.heartbeat_interval_ms, self.session_timeout_ms);
        match !self.enabled() || beat.saturating_mul(3) <= session {
            true => Ok(()),
            false => Err(bad(
                "broker.heartbeat.interval.ms",
                format!("{beat} must be at most a third of broker.session.timeout.ms={session}"),
            )),
        }
    }
}

/// The endpoints of `cluster.etcd.endpoints` (comma-separated), each `http://host:port`
/// or each `https://host:port` (one scheme for all); empty when cluster mode is off.
pub fn endpoints(list: &str) -> Result<Vec<String>, SettingsError> {
    let refuse = |e: &str, why: &str| bad("cluster.etcd.endpoints", format!("{e:?}: {why}"));
    let mut out = Vec::new();
    let mut schemes = std::collections::BTreeSet::new();
    for e in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let scheme = ["http", "https"]
            .into_iter()
            .find(|s| e.starts_with(&format!("{s}://")));
        let Some(scheme) = scheme else {
            return Err(refuse(e, "use http://host:port or https://host:port"));
        };
        schemes.insert(scheme);
        let rest = &e[scheme.len() + 3..];
        let (host, port) = rest
            .trim_end_matches('/')
            .rsplit_once(':')
            .unwrap_or((rest, ""));
        if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(refuse(e, "use http://host:port or https://host:port"));
        }
        out.push(format!("{scheme}://{host}:{port}"));
    }
    if schemes.len() > 1 {
        return Err(refuse(
            list,
            "every endpoint uses the same scheme (http or https)",
        ));
    }
    assert!(
        out.iter().all(|e| e.contains("://")),
        "endpoints keep their scheme"
    );
    Ok(out)
}

/// A cluster name is one segment of the etcd keys: letters, digits, `.`, `_` and `-`.
pub fn check_name(name: &str) -> Result<(), SettingsError> {
    let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    match !name.is_empty() && name.len() <= 200 && name.chars().all(fits) {
        true => Ok(()),
        false => Err(bad(
            "cluster.name",
            format!("{name:?}: 1 to 200 letters, digits, '.', '_' or '-'"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_host_port_and_anything_else_is_named() {
        let ok = endpoints(" http://127.0.0.1:2379 ,http://h:1/").unwrap();
        assert_eq!(ok, ["http://127.0.0.1:2379", "http://h:1"]);
        assert_eq!(endpoints("https://h:1").unwrap(), ["https://h:1"]);
        assert!(endpoints("").unwrap().is_empty());
        for bad in [
            "127.0.0.1:2379",
            "ftp://h:1",
            "http://h:1,https://h:2",
            "http://h",
            "http://:1",
            "http://h:0",
        ] {
            let why = endpoints(bad).unwrap_err().to_string();
            assert!(why.contains(bad.trim_end_matches('/')), "{why}");
            assert!(why.contains("cluster.etcd.endpoints"), "{why}");
        }
    }

    #[test]
    fn tls_to_etcd_needs_its_ca_a_certificate_with_its_key_and_https() {
        let tls = |endpoints: &str, ca: &str, cert: &str, key: &str| ClusterSettings {
            etcd_endpoints: endpoints.into(),
            etcd_ca_location: ca.into(),
            etcd_certificate_location: cert.into(),
            etcd_key_location: key.into(),
            ..ClusterSettings::default()
        };
        let refusal = |s: ClusterSettings| s.check_etcd_tls().unwrap_err().to_string();
        assert!(tls("https://h:1", "ca", "c", "k").check_etcd_tls().is_ok());
        assert!(tls("https://h:1", "ca", "", "").check_etcd_tls().is_ok());
        assert!(tls("http://h:1", "", "", "").check_etcd_tls().is_ok());
        let no_ca = refusal(tls("https://h:1", "", "c", "k"));
        assert!(no_ca.contains("cluster.etcd.ssl.ca.location"), "{no_ca}");
        let lone_cert = refusal(tls("https://h:1", "ca", "c", ""));
        assert!(lone_cert.contains("come together"), "{lone_cert}");
        let unused = refusal(tls("http://h:1", "ca", "", ""));
        assert!(unused.contains("not https://"), "{unused}");
    }

    #[test]
    fn a_cluster_name_is_one_key_segment() {
        assert!(check_name("prod-eu_1.a").is_ok());
        for bad in ["", "a/b", "a b", &"x".repeat(201)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_heartbeat_fits_three_times_in_the_session_timeout_in_cluster_mode() {
        let mut c = ClusterSettings {
            heartbeat_interval_ms: 3_001,
            ..ClusterSettings::default()
        };
        assert!(
            c.check_heartbeat().is_ok(),
            "not checked without cluster mode"
        );
        c.etcd_endpoints = "http://127.0.0.1:2379".into();
        let why = c.check_heartbeat().unwrap_err().to_string();
        assert!(why.contains("at most a third"), "{why}");
        c.heartbeat_interval_ms = 3_000;
        assert!(c.check_heartbeat().is_ok());
    }
}
