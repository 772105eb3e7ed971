//! A listener's security as its front end applies it (Kafka's listeners and the native
//! one alike): the security protocol, the SASL mechanisms, TLS, how a client certificate
//! becomes a principal, and how long a SASL session lasts.

use std::rc::Rc;
use std::time::Duration;

use crate::security::principal_mapping::PrincipalMapper;
use crate::security::{SaslMechanism, SecurityProtocol};

pub struct ListenerSecurity {
    pub protocol: SecurityProtocol,
    /// What a SASL listener offers (`sasl.enabled.mechanisms`).
    pub mechanisms: Vec<SaslMechanism>,
    /// The TLS of an SSL or SASL_SSL listener.
    pub tls: Option<Rc<super::tls::TlsSource>>,
    /// How a client certificate's DN becomes the principal.
    pub mapper: PrincipalMapper,
    /// KIP-368: `connections.max.reauth.ms` (None: sessions do not expire).
    pub session_lifetime: Option<Duration>,
}

impl ListenerSecurity {
    /// The lifetime told to clients, in ms (0: none).
    pub fn session_lifetime_ms(&self) -> i64 {
        self.session_lifetime.map_or(0, |d| d.as_millis() as i64)
    }

    /// A new SASL exchange on a SASL listener (`make` frames it for its protocol, given
    /// the mechanisms and the session lifetime in ms); None on the others.
    pub fn sasl_exchange<H: super::Handshake + 'static>(
        &self,
        make: impl FnOnce(Vec<SaslMechanism>, i64) -> H,
    ) -> Option<Box<dyn super::Handshake>> {
        let needs_sasl = self.protocol.needs_sasl();
        needs_sasl.then(|| {
            let exchange = make(self.mechanisms.clone(), self.session_lifetime_ms());
            Box::new(exchange) as Box<dyn super::Handshake>
        })
    }

    /// Whether `frame` is a request with api key `key` on a SASL listener.
    pub fn is_sasl_request(&self, frame: &[u8], key: i16) -> bool {
        let frame_key = frame.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]]));
        self.protocol.needs_sasl() && frame_key == Some(key)
    }
}
