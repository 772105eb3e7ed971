//! SASL PLAIN (RFC 4616): one token `[authzid] NUL authcid NUL password`, checked against
//! the user's stored SCRAM credential (no password is ever stored). Clear text: meant for
//! TLS listeners; on SASL_PLAINTEXT it is only as safe as the network.

use super::credentials;
use super::scram::{Mechanism, ScramError, MAX_MESSAGE};

/// The user a PLAIN token authenticates, or why not (always error 58 to the client).
pub fn authenticate(token: &[u8]) -> Result<String, ScramError> {
    if token.len() > MAX_MESSAGE {
        return Err(ScramError("PLAIN token too long"));
    }
    let text = std::str::from_utf8(token).map_err(|_| ScramError("not UTF-8"))?;
    let parts: Vec<&str> = text.split('\0').collect();
    let [authzid, user, password] = parts[..] else {
        return Err(ScramError("malformed PLAIN token"));
    };
    if user.is_empty() || password.is_empty() {
        return Err(ScramError("empty user name or password"));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(ScramError("authorization id differs from the user"));
    }
    // Either stored mechanism proves the password; the stronger is tried first.
    let verified = [Mechanism::Sha512, Mechanism::Sha256]
        .into_iter()
        .find_map(|m| credentials::lookup(user, m).map(|c| (m, c)))
        .is_some_and(|(m, c)| c.matches_password(m, password));
    match verified {
        true => Ok(user.to_string()),
        false => Err(ScramError("Invalid username or password")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::credentials::{install, CredentialStore};
    use crate::security::scram::Credential;

    #[test]
    fn plain_tokens_are_checked_against_the_scram_credential() {
        let mut store = CredentialStore::default();
        store.set(
            "alice",
            Mechanism::Sha256,
            Credential::new(Mechanism::Sha256, "pw", 4096),
        );
        install(store);
        assert_eq!(authenticate(b"\0alice\0pw").unwrap(), "alice");
        assert_eq!(authenticate(b"alice\0alice\0pw").unwrap(), "alice");
        for bad in [
            &b"\0alice\0nope"[..],
            b"\0bob\0pw",
            b"bob\0alice\0pw",
            b"\0alice\0",
            b"alice\0pw",
            b"\0alice\0pw\0x",
        ] {
            assert!(authenticate(bad).is_err(), "{bad:?}");
        }
        install(CredentialStore::default());
    }
}
