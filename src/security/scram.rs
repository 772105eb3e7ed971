//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's broker runs them: the
//! stored credential (salt, StoredKey, ServerKey, iterations; never the password), and the
//! server's side of one exchange: client-first -> server-first -> client-final -> server-final.
//! Passwords are raw UTF-8 (no SASLprep, as Kafka and its clients). The proof check is
//! constant-time; every failure is one opaque error, so a client cannot tell an unknown user
//! from a wrong password.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// Kafka's bounds on a stored credential's iterations (ScramMechanism, KIP-554).
pub const MIN_ITERATIONS: u32 = 4096;
pub const MAX_ITERATIONS: u32 = 16384;
/// Longest client message accepted (a name and a nonce; Kafka's clients send ~100 bytes).
pub const MAX_MESSAGE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mechanism {
    Sha256,
    Sha512,
}

impl Mechanism {
    pub const ALL: [Mechanism; 2] = [Mechanism::Sha256, Mechanism::Sha512];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Sha256 => "SCRAM-SHA-256",
            Mechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Kafka's number for it (AlterUserScramCredentials: 1 SHA-256, 2 SHA-512).
    pub fn kafka_type(self) -> i8 {
        match self {
            Mechanism::Sha256 => 1,
            Mechanism::Sha512 => 2,
        }
    }

    pub fn from_kafka_type(t: i8) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.kafka_type() == t)
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => {
                let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Mechanism::Sha512 => {
                let mut m = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => Sha256::digest(data).to_vec(),
            Mechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// A client's proof and the server signature it expects, from the salted password
    /// and the AuthMessage (RFC 5802 section 3).
    pub fn client_proof(self, salted: &[u8], auth_message: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let client_key = self.hmac(salted, b"Client Key");
        let stored = self.hash(&client_key);
        let signature = self.hmac(&stored, auth_message);
        let proof = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect::<Vec<u8>>();
        // Key and signature are both the hash's length: the XOR covers all of the key.
        assert_eq!(
            proof.len(),
            client_key.len(),
            "a proof shorter than its key"
        );
        let server_key = self.hmac(salted, b"Server Key");
        (proof, self.hmac(&server_key, auth_message))
    }

    /// PBKDF2-HMAC of the password (RFC 5802's Hi), the hash's length.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            Mechanism::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

/// What the server stores for a (user, mechanism).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl Credential {
    /// From a salted password (what AlterUserScramCredentials carries).
    pub fn from_salted(
        mechanism: Mechanism,
        salted: &[u8],
        salt: Vec<u8>,
        iterations: u32,
    ) -> Self {
        let client_key = mechanism.hmac(salted, b"Client Key");
        let credential = Credential {
            salt,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted, b"Server Key"),
            iterations,
        };
        // Both keys are digests of the mechanism's hash: a login compares them whole.
        assert_eq!(credential.stored_key.len(), credential.server_key.len());
        credential
    }

    /// From a password, with a fresh random salt.
    pub fn new(mechanism: Mechanism, password: &str, iterations: u32) -> Self {
        let salt: Vec<u8> = (0..32).map(|_| fastrand::u8(..)).collect();
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
        Credential::from_salted(mechanism, &salted, salt, iterations)
    }

    /// Whether `password` is this credential's (PLAIN logins), in constant time.
    pub fn matches_password(&self, mechanism: Mechanism, password: &str) -> bool {
        let salted = mechanism.salted_password(password.as_bytes(), &self.salt, self.iterations);
        let again = Credential::from_salted(mechanism, &salted, Vec::new(), self.iterations);
        bool::from(again.stored_key.ct_eq(&self.stored_key))
    }
}

/// A failed exchange; what the client is told is always the same (error 58).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScramError(pub &'static str);

/// The server's side of one exchange, between client-first and client-final.
pub struct ServerExchange {
    mechanism: Mechanism,
    user: String,
    credential: Option<Credential>,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

/// (user, client nonce, client-first-bare) of a client-first message.
fn parse_client_first(message: &[u8]) -> Result<(String, String, String), ScramError> {
    if message.len() > MAX_MESSAGE {
        return Err(ScramError("client-first message too long"));
    }
    let text = std::str::from_utf8(message).map_err(|_| ScramError("not UTF-8"))?;
    // gs2 header: "n,," or "n,a=<authzid>," (no channel binding).
    let rest = text
        .strip_prefix("n,")
        .ok_or(ScramError("channel binding is not supported"))?;
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(ScramError("malformed gs2 header"))?;
    let mut attrs = bare.split(',');
    let mut first = attrs.next().unwrap_or_default();
    if first.starts_with("m=") {
        return Err(ScramError("mandatory extensions are not supported"));
    }
    let user = unescape(
        first
            .strip_prefix("n=")
            .ok_or(ScramError("missing user name"))?,
    )?;
    first = attrs.next().unwrap_or_default();
    let nonce = first
        .strip_prefix("r=")
        .ok_or(ScramError("missing client nonce"))?;
    if nonce.is_empty() || user.is_empty() {
        return Err(ScramError("empty user name or nonce"));
    }
    if let Some(authz) = authzid.strip_prefix("a=") {
        if unescape(authz)? != user {
            return Err(ScramError("authorization id differs from the user"));
        }
    } else if !authzid.is_empty() {
        return Err(ScramError("malformed gs2 header"));
    }
    Ok((user, nonce.to_string(), bare.to_string()))
}

fn unescape(name: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError("malformed user name escape")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

impl ServerExchange {
    /// Answers a client-first message, with the credential `lookup` finds for the user it
    /// names (after RFC 5802's `=2C`/`=3D` unescaping). An unknown user (no credential) gets
    /// a well-formed server-first with a random salt: it fails at the proof, exactly as a
    /// wrong password.
    pub fn start(
        mechanism: Mechanism,
        client_first: &[u8],
        lookup: impl FnOnce(&str) -> Option<Credential>,
    ) -> Result<(ServerExchange, Vec<u8>), ScramError> {
        let (user, client_nonce, client_first_bare) = parse_client_first(client_first)?;
        let credential = lookup(&user);
        let server_nonce: String = (0..24).map(|_| fastrand::alphanumeric()).collect();
        let nonce = format!("{client_nonce}{server_nonce}");
        let (salt, iterations) = match &credential {
            Some(c) => (c.salt.clone(), c.iterations),
            None => ((0..32).map(|_| fastrand::u8(..)).collect(), MIN_ITERATIONS),
        };
        let server_first = format!("r={nonce},s={},i={iterations}", B64.encode(salt));
        let reply = server_first.clone().into_bytes();
        let exchange = ServerExchange {
            mechanism,
            user,
            credential,
            client_first_bare,
            server_first,
            nonce,
        };
        Ok((exchange, reply))
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    /// Checks the client-final message's proof; the server-final message on success.
    pub fn finish(self, client_final: &[u8]) -> Result<Vec<u8>, ScramError> {
        if client_final.len() > MAX_MESSAGE {
            return Err(ScramError("client-final message too long"));
        }
        let text = std::str::from_utf8(client_final).map_err(|_| ScramError("not UTF-8"))?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(ScramError("missing proof"))?;
        let mut attrs = without_proof.split(',');
        let binding = attrs.next().unwrap_or_default();
        if binding != "c=biws" && !binding.starts_with("c=") {
            return Err(ScramError("missing channel binding attribute"));
        }
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or(ScramError("missing nonce"))?;
        // Kafka's rule (endsWith): librdkafka before 2.6.1 sends its nonce twice.
        if !nonce.ends_with(&self.nonce) {
            return Err(ScramError("nonce mismatch"));
        }
        // AuthMessage uses the nonce as received, without extensions.
        let auth_message = format!(
            "{},{},{binding},r={nonce}",
            self.client_first_bare, self.server_first
        );
        let proof = B64
            .decode(proof)
            .map_err(|_| ScramError("malformed proof"))?;
        let credential = self.credential.ok_or(ScramError("unknown user"))?;
        let m = self.mechanism;
        let signature = m.hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(ScramError("malformed proof"));
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        // Checked equal above: the key recovered is the proof's full length.
        assert_eq!(client_key.len(), proof.len());
        if !bool::from(m.hash(&client_key).ct_eq(&credential.stored_key)) {
            return Err(ScramError("wrong password"));
        }
        let server_signature = m.hmac(&credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::scram_client::ClientExchange;

    /// RFC 7677's example, as Kafka's ScramFormatterTest checks it.
    #[test]
    fn rfc_7677_exchange_verifies() {
        let m = Mechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = m.salted_password(b"pencil", &salt, 4096);
        let credential = Credential::from_salted(m, &salted, salt, 4096);
        let client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let exchange = ServerExchange {
            mechanism: m,
            user: "user".into(),
            credential: Some(credential.clone()),
            client_first_bare: client_first_bare.into(),
            server_first: format!("r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
            nonce: nonce.into(),
        };
        let client_final =
            format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        assert_eq!(
            exchange.finish(client_final.as_bytes()).unwrap(),
            b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert!(credential.matches_password(m, "pencil"));
        assert!(!credential.matches_password(m, "pencil "));
    }

    #[test]
    fn right_and_wrong_passwords_and_unknown_users() {
        for m in Mechanism::ALL {
            let stored = Credential::new(m, "s3cret", 4096);
            let attempt = |credential: Option<Credential>, password: &str| {
                let (client, first) = ClientExchange::start(m, "al,ice", password);
                let (ex, server_first) = ServerExchange::start(m, &first, |_| credential).unwrap();
                assert_eq!(ex.user(), "al,ice");
                let (awaiting, last) = client.respond(&server_first).unwrap();
                let server_final = ex.finish(&last)?;
                awaiting
                    .finish(&server_final)
                    .expect("the client checks the server's signature");
                Ok(())
            };
            assert!(attempt(Some(stored.clone()), "s3cret").is_ok());
            assert_eq!(
                attempt(Some(stored), "S3cret"),
                Err(ScramError("wrong password"))
            );
            assert_eq!(attempt(None, "s3cret"), Err(ScramError("unknown user")));
        }
    }

    #[test]
    fn malformed_client_messages_are_refused() {
        let m = Mechanism::Sha256;
        for bad in [
            &b"y,,n=u,r=x"[..],
            b"p=tls,,n=u,r=x",
            b"n,,m=ext,n=u,r=x",
            b"n,,n=u",
            b"n,,n=,r=x",
            b"n,,n=a=2,r=x",
            b"n,a=other,n=u,r=x",
            b"\xff",
        ] {
            assert!(ServerExchange::start(m, bad, |_| None).is_err(), "{bad:?}");
        }
        let long = vec![b'a'; MAX_MESSAGE + 1];
        assert!(ServerExchange::start(m, &long, |_| None).is_err());
        let named = std::cell::RefCell::new(String::new());
        let looked_up = |user: &str| {
            *named.borrow_mut() = user.to_string();
            None
        };
        assert!(ServerExchange::start(m, b"n,a=u,n=u,r=x", looked_up).is_ok());
        assert_eq!(*named.borrow(), "u");
    }
}
