//! PEM files as Kafka's `ssl.*.type=PEM` (KIP-651) and librdkafka's `ssl.*.location`
//! hold them: certificates (a chain, or trusted CAs) and a private key. One reader for the
//! listeners' keystores and truststores and for the tools' client certificates.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why a PEM file gave nothing usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PemError {
    /// The file could not be read, or a PEM section in it could not be decoded.
    #[error(transparent)]
    Unreadable(#[from] rustls::pki_types::pem::Error),
    #[error("no certificate in the file")]
    NoCertificate,
}

/// Every certificate in the file, in order; none is an error.
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(path)?.collect::<Result<_, _>>()?;
    match certs.is_empty() {
        true => Err(PemError::NoCertificate),
        false => Ok(certs),
    }
}

/// The file's private key.
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    Ok(PrivateKeyDer::from_pem_file(path)?)
}
