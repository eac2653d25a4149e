//! HTTPS: rustls (ring provider) client configurations built from a spec's `TlsOptions`, the
//! handshake on a connected TCP stream and its errors by category; the pre-flight probe in
//! `tls/probe.rs`, a refused handshake's reasons in words in `tls/reasons.rs`, the verifiers
//! around rustls's own in `tls/verifiers.rs`.
//!
//! A run checks the options once (`TlsSetup::new`: PEM parsed, roots loaded, names parsed) and
//! each engine thread builds its own `ClientConfig` from it (`TlsSetup::thread`), so that its
//! session cache (resumption) is its own and no lock is shared between threads.

use std::io;
use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
pub use rustls::pki_types::ServerName;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{AlertDescription, ClientConfig, HandshakeKind, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use AlertDescription as A;

use crate::stats::ErrorKind;

mod facts;
mod probe;
mod reasons;
mod verifiers;

pub use probe::probe;
use reasons::{client_cert_error, words};
use verifiers::{AnyCertificate, Asked, Noted, Noting, Pinned};

/// The spec's TLS options (PEM contents, not paths: agents on other machines get them too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any server certificate (the handshake's signatures are still checked).
    pub insecure: bool,
    /// Trust only these roots (PEM); None: the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate chain and its key (PEM), both or neither.
    pub cert_pem: Option<Vec<u8>>,
    pub key_pem: Option<Vec<u8>>,
    /// Session resumption (tickets, session ids); false: every handshake is a full one.
    pub resume: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions { insecure: false, ca_pem: None, cert_pem: None, key_pem: None, resume: true }
    }
}

type ClientAuth = (Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>);

/// The options of a run, checked: what each thread builds its configuration from.
pub struct TlsSetup {
    options: TlsOptions,
    provider: Arc<CryptoProvider>,
    roots: Arc<RootCertStore>,
    /// The `ca_pem` certificates: a server certificate that is one of them is trusted as it is.
    pinned: Arc<Vec<CertificateDer<'static>>>,
    client: Option<ClientAuth>,
}

impl TlsSetup {
    /// Parses the PEM, loads the roots and builds one configuration to check that it can be
    /// built; the error names the field.
    pub fn new(options: &TlsOptions) -> Result<TlsSetup, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        let mut pinned = Vec::new();
        match &options.ca_pem {
            Some(pem) => {
                let certs = parse_certs(pem, "tls.ca_pem")?;
                pinned.clone_from(&certs);
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err("tls.ca_pem: no usable CA certificate in it".into());
                }
            }
            None if !options.insecure => {
                // the system's bundle; unreadable ones are left out (a handshake then says UnknownIssuer)
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
            None => {}
        }
        let client = match (&options.cert_pem, &options.key_pem) {
            (None, None) => None,
            (Some(cert), Some(key)) => {
                let chain = parse_certs(cert, "tls.cert_pem")?;
                let key =
                    PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("tls.key_pem: no private key ({})", words(&format!("{e:?}"))))?;
                Some((chain, Arc::new(key)))
            }
            _ => return Err("tls: cert_pem and key_pem go together".into()),
        };
        let setup =
            TlsSetup { options: options.clone(), provider, roots: Arc::new(roots), pinned: Arc::new(pinned), client };
        setup.config(None)?;
        Ok(setup)
    }

    /// A configuration; `noted` (the probe's) is told whether the server asks for a client
    /// certificate, and the certificate it presents.
    fn config(&self, noted: Option<&Noted>) -> Result<Arc<ClientConfig>, String> {
        let builder = ClientConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("tls: {e}"))?;
        let webpki = || {
            WebPkiServerVerifier::builder_with_provider(Arc::clone(&self.roots), Arc::clone(&self.provider)).build()
        };
        // how the server's certificate is checked: any accepted, the ca_pem roots with their
        // certificates pinned, or the system's roots (none readable: each handshake says UnknownIssuer)
        let mut custom: Option<Arc<dyn ServerCertVerifier>> = if self.options.insecure {
            Some(Arc::new(AnyCertificate(Arc::clone(&self.provider))))
        } else if !self.pinned.is_empty() {
            let inner = webpki().map_err(|_| "tls.ca_pem: no usable CA certificate in it".to_string())?;
            Some(Arc::new(Pinned { inner, pinned: Arc::clone(&self.pinned) }))
        } else if noted.is_some() {
            webpki().ok().map(|v| v as Arc<dyn ServerCertVerifier>)
        } else {
            None
        };
        if let Some(noted) = noted {
            let certificate = &noted.certificate;
            custom = custom.map(|inner| Arc::new(Noting { inner, certificate: Arc::clone(certificate) }) as _);
        }
        let builder = match custom {
            Some(verifier) => builder.dangerous().with_custom_certificate_verifier(verifier),
            None => builder.with_root_certificates(Arc::clone(&self.roots)),
        };
        let mut config = match &self.client {
            Some((chain, key)) => {
                builder.with_client_auth_cert(chain.clone(), key.clone_key()).map_err(|e| client_cert_error(&e))?
            }
            None => builder.with_no_client_auth(),
        };
        if let Some(noted) = noted {
            config.client_auth_cert_resolver = Arc::new(Asked {
                inner: Arc::clone(&config.client_auth_cert_resolver),
                asked: Arc::clone(&noted.asked),
            });
        }
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        if !self.options.resume {
            config.resumption = Resumption::disabled();
        }
        Ok(Arc::new(config))
    }

    /// One engine thread's client: its own configuration (and session cache), the server name
    /// of each distinct address (`names`, by address index; None: plain).
    pub fn thread(&self, names: &[Option<ServerName<'static>>]) -> Tls {
        let config = self.config(None).expect("checked by TlsSetup::new");
        Tls { connector: TlsConnector::from(config), names: names.to_vec() }
    }
}

/// The checked options of a run and the server name of each distinct address (None: plain).
pub type RunTls = (TlsSetup, Vec<Option<ServerName<'static>>>);

/// A run's TLS: None when no target is HTTPS, else the checked options (the spec's, or the
/// defaults) and the server name of each distinct address (`tls_names`, in address order).
pub fn run_setup<'a>(
    spec: &crate::spec::Spec,
    tls_names: impl Iterator<Item = &'a Option<String>>,
) -> Result<Option<RunTls>, String> {
    let names = tls_names.map(|n| n.as_deref().map(server_name).transpose()).collect::<Result<Vec<_>, _>>()?;
    if names.iter().all(Option::is_none) {
        return Ok(None);
    }
    let setup = TlsSetup::new(spec.tls.as_ref().unwrap_or(&TlsOptions::default()))?;
    Ok(Some((setup, names)))
}

/// The server name of a target's `tls_name`: a DNS name (sent as SNI) or an IP address (no SNI;
/// the certificate's IP addresses are checked).
pub fn server_name(name: &str) -> Result<ServerName<'static>, String> {
    let bare = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')).unwrap_or(name);
    ServerName::try_from(bare.to_string()).map_err(|_| format!("targets: bad tls_name {name:?}"))
}

fn parse_certs(pem: &[u8], field: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{field}: not PEM certificates ({})", words(&format!("{e:?}"))))?;
    if certs.is_empty() {
        return Err(format!("{field}: no certificate in it"));
    }
    Ok(certs)
}

/// One thread's TLS client.
pub struct Tls {
    connector: TlsConnector,
    names: Vec<Option<ServerName<'static>>>,
}

/// A completed handshake: its stream and whether it resumed a session.
pub struct Handshake {
    pub stream: Box<TlsStream<TcpStream>>,
    pub resumed: bool,
}

impl Tls {
    /// Whether the address `addr_id` speaks TLS.
    #[inline]
    pub fn is_tls(&self, addr_id: usize) -> bool {
        self.names.get(addr_id).is_some_and(Option::is_some)
    }

    pub async fn handshake(&self, tcp: TcpStream, addr_id: usize) -> Result<Handshake, ErrorKind> {
        let name = self.names[addr_id].clone().expect("a TLS address");
        let stream =
            self.connector.connect(name, tcp).await.map_err(|e| error_kind(&e).unwrap_or(ErrorKind::TlsHandshake))?;
        let resumed = stream.get_ref().1.handshake_kind() == Some(HandshakeKind::Resumed);
        Ok(Handshake { stream: Box::new(stream), resumed })
    }
}

/// The category of an I/O error that carries a TLS error (a handshake's, or an alert received
/// later: a client certificate refused after a TLS 1.3 handshake); None for a plain I/O error.
pub fn error_kind(e: &io::Error) -> Option<ErrorKind> {
    let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(if is_certificate_error(tls) { ErrorKind::TlsCertificate } else { ErrorKind::TlsHandshake })
}

fn is_certificate_error(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => true,
        rustls::Error::AlertReceived(alert) => matches!(
            alert,
            A::BadCertificate
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::CertificateUnknown
                | A::UnknownCA
                | A::CertificateRequired
                | A::AccessDenied
        ),
        _ => false,
    }
}

/// The category of a TLS error after the handshake (io errors carry rustls's as InvalidData): the
/// server's verdict on the client certificate (an alert, which TLS 1.3 servers send once the
/// client has finished its handshake) is `tls_certificate`; another alert ends the connection
/// (`reset`); anything else (a record that does not decrypt, a malformed one) is `other`. Never
/// `tls_handshake`, which is for failures inside the handshake. None for a plain I/O error.
pub fn after_handshake_kind(e: &io::Error) -> Option<ErrorKind> {
    let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match tls {
        rustls::Error::AlertReceived(_) if is_certificate_error(tls) => ErrorKind::TlsCertificate,
        rustls::Error::AlertReceived(_) => ErrorKind::Reset,
        _ => ErrorKind::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bad_pem_are_checked() {
        assert!(matches!(server_name("example.test"), Ok(ServerName::DnsName(_))));
        assert!(matches!(server_name("127.0.0.1"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(server_name("[::1]"), Ok(ServerName::IpAddress(_))));
        assert!(server_name("bad name!").is_err());
        let bad = |o: TlsOptions| TlsSetup::new(&o).err().unwrap_or_default();
        let ca = TlsOptions { ca_pem: Some(b"not pem".to_vec()), ..TlsOptions::default() };
        assert!(bad(ca).starts_with("tls.ca_pem:"));
        let half = TlsOptions { cert_pem: Some(b"x".to_vec()), ..TlsOptions::default() };
        assert!(bad(half).contains("go together"));
        assert!(TlsSetup::new(&TlsOptions { insecure: true, ..TlsOptions::default() }).is_ok());
    }
}
