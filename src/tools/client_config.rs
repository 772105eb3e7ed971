//! How a tool reaches a secured listener, named as Kafka's clients name it: Kafka's
//! `--command-config FILE` (a properties file) and kcat's `-X key=value` (later wins):
//! `security.protocol` (plaintext, ssl, sasl_plaintext, sasl_ssl), `sasl.mechanism`
//! (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), `sasl.username`, `sasl.password`,
//! `ssl.ca.location` (the CAs that sign the server's certificate),
//! `ssl.certificate.location` and `ssl.key.location` (a client certificate, for
//! `ssl.client.auth`). Java's spellings (`sasl.jaas.config` aside) are accepted too.

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use crate::security::client::ClientSecurity;
use crate::security::{SaslMechanism, SecurityProtocol};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientConfigArgs {
    /// A client properties file (security.protocol, sasl.*, ssl.*).
    #[arg(long)]
    pub command_config: Option<PathBuf>,
    /// One client property, kcat-style (`-X security.protocol=sasl_ssl`); repeatable.
    #[arg(short = 'X', value_name = "KEY=VALUE")]
    pub property: Vec<String>,
}

/// `key=value` lines; `#` and `!` start comments (Java properties, without continuations).
fn parse_properties(text: &str, into: &mut BTreeMap<String, String>) -> Result<(), String> {
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let (k, v) = line
            .split_once(['=', ':'])
            .ok_or_else(|| format!("{line:?}: expected key=value"))?;
        into.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(())
}

impl ClientConfigArgs {
    /// The properties: the file's, then each -X.
    fn properties(&self) -> Result<BTreeMap<String, String>, String> {
        let mut props = BTreeMap::new();
        if let Some(path) = &self.command_config {
            let text =
                crate::io::os::read_text(path).map_err(|e| format!("{}: {e}", path.display()))?;
            parse_properties(&text, &mut props).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        for p in &self.property {
            parse_properties(p, &mut props).map_err(|e| format!("-X {e}"))?;
        }
        Ok(props)
    }

    /// One property's value (the file's, or -X's), if set and not empty.
    pub fn property(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self.properties()?.remove(key).filter(|v| !v.is_empty()))
    }

    pub fn security(&self) -> Result<ClientSecurity, String> {
        let props = self.properties()?;
        let get = |k: &str| props.get(k).filter(|v| !v.is_empty()).cloned();
        let protocol = match get("security.protocol").map(|p| p.to_ascii_uppercase()) {
            None => SecurityProtocol::Plaintext,
            Some(p) => SecurityProtocol::ALL
                .into_iter()
                .find(|s| s.name() == p)
                .ok_or_else(|| {
                    format!("security.protocol={p}: plaintext, ssl, sasl_plaintext or sasl_ssl")
                })?,
        };
        let sasl = match protocol.needs_sasl() {
            false => None,
            true => Some(sasl_of(&get)?),
        };
        let certificate = match (get("ssl.certificate.location"), get("ssl.key.location")) {
            (Some(c), Some(k)) => Some((PathBuf::from(c), PathBuf::from(k))),
            (None, None) => None,
            _ => return Err("ssl.certificate.location and ssl.key.location go together".into()),
        };
        Ok(ClientSecurity {
            protocol,
            sasl,
            ca_location: get("ssl.ca.location").map(PathBuf::from),
            certificate,
        })
    }
}

fn sasl_of(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<(SaslMechanism, String, String), String> {
    let name = get("sasl.mechanism")
        .or_else(|| get("sasl.mechanisms"))
        .unwrap_or_else(|| "PLAIN".to_string());
    let mechanism = SaslMechanism::from_name(&name.to_ascii_uppercase())
        .ok_or_else(|| format!("sasl.mechanism={name}: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"))?;
    let user = get("sasl.username").ok_or("SASL needs sasl.username")?;
    let password = get("sasl.password").ok_or("SASL needs sasl.password")?;
    Ok((mechanism, user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_and_x_properties_combine_as_kcat_does() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("client.properties");
        std::fs::write(
            &file,
            "# admin\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
             sasl.username=admin\nsasl.password=a=b\nssl.ca.location=/ca.pem\n",
        )
        .unwrap();
        let args = ClientConfigArgs {
            command_config: Some(file),
            property: vec!["sasl.username=ops".into()],
        };
        let s = args.security().unwrap();
        assert_eq!(s.protocol, SecurityProtocol::SaslSsl);
        let scram = SaslMechanism::Scram(crate::security::scram::Mechanism::Sha512);
        assert_eq!(s.sasl, Some((scram, "ops".into(), "a=b".into())));
        assert_eq!(s.ca_location, Some(PathBuf::from("/ca.pem")));
        let bad = ClientConfigArgs {
            property: vec!["security.protocol=tls".into()],
            ..Default::default()
        };
        assert!(bad.security().is_err());
        let no_password = ClientConfigArgs {
            property: vec![
                "security.protocol=sasl_plaintext".into(),
                "sasl.username=u".into(),
            ],
            ..Default::default()
        };
        assert!(no_password.security().is_err());
        assert_eq!(
            ClientConfigArgs::default().security().unwrap(),
            ClientSecurity::plaintext()
        );
    }
}
