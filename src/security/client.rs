//! A client's side of a listener's security (shardlog's tools and client): which protocol,
//! which SASL credentials, and the TLS settings, named as Kafka's clients name them
//! (`tools/client_config.rs` reads them from `--command-config` and `-X`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;

use super::{SaslMechanism, SecurityProtocol};

/// Why a client's security settings cannot be used (a file, a name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClientSetupError(pub String);

/// A tool's connection security.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSecurity {
    pub protocol: SecurityProtocol,
    /// SASL: the mechanism, user and password.
    pub sasl: Option<(SaslMechanism, String, String)>,
    pub ca_location: Option<PathBuf>,
    /// A client certificate chain and its key (PEM).
    pub certificate: Option<(PathBuf, PathBuf)>,
}

impl ClientSecurity {
    pub fn plaintext() -> ClientSecurity {
        ClientSecurity {
            protocol: SecurityProtocol::Plaintext,
            sasl: None,
            ca_location: None,
            certificate: None,
        }
    }
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ClientSetupError> {
    super::pem::certificates(path).map_err(|e| ClientSetupError(format!("{}: {e}", path.display())))
}

impl ClientSecurity {
    /// The TLS client settings: the server checked against `ssl.ca.location`, a client
    /// certificate when one is configured.
    pub fn tls_config(&self) -> Result<Arc<rustls::ClientConfig>, ClientSetupError> {
        let fail = |why: String| ClientSetupError(why);
        let ca = self.ca_location.as_ref().ok_or_else(|| {
            fail("TLS needs ssl.ca.location (the CA that signed the server's certificate)".into())
        })?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in certificates(ca)? {
            roots
                .add(cert)
                .map_err(|e| fail(format!("{}: {e}", ca.display())))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(e.to_string()))?
            .with_root_certificates(roots);
        let config = match &self.certificate {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                let key = super::pem::private_key(key)
                    .map_err(|e| fail(format!("{}: {e}", key.display())))?;
                builder
                    .with_client_auth_cert(certificates(chain)?, key)
                    .map_err(|e| fail(format!("client certificate: {e}")))?
            }
        };
        Ok(Arc::new(config))
    }
}

/// The name a TLS client checks the server's certificate against: the host of `addr`.
pub fn server_name(addr: &str) -> Result<rustls::pki_types::ServerName<'static>, ClientSetupError> {
    let host = addr
        .rsplit_once(':')
        .map_or(addr, |(h, _)| h)
        .trim_matches(['[', ']']);
    rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| ClientSetupError(format!("{host}: {e}")))
}
