//! Certificates minted by the TLS tests: a CA, a server certificate it signs for
//! 127.0.0.1 and localhost (in a PEM keystore as KIP-651 reads it), and client
//! certificates it signs for a subject.
#![allow(dead_code)]

use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair};

pub struct TestCa {
    cert: Certificate,
    key: KeyPair,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa { cert, key }
    }

    /// The CA's certificate (a truststore, or a client's ssl.ca.location).
    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A server keystore: its certificate for localhost and 127.0.0.1, the CA's, its key.
    pub fn server_keystore(&self) -> String {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "shardlog test server");
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        format!("{}{}{}", cert.pem(), self.cert.pem(), key.serialize_pem())
    }

    /// A client certificate for subject `O=org, CN=cn`: (certificate PEM, key PEM).
    pub fn client(&self, org: &str, cn: &str) -> (String, String) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        // A fresh name: rcgen's default one already holds a CN, which would keep its place.
        let mut name = rcgen::DistinguishedName::new();
        name.push(DnType::OrganizationName, org);
        name.push(DnType::CommonName, cn);
        params.distinguished_name = name;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}
