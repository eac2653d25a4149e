//! HTTPS: rustls (ring provider) client configurations built from a spec's `TlsOptions`, the
//! handshake on a connected TCP stream, its errors by category, and the pre-flight probe.
//!
//! A run checks the options once (`TlsSetup::new`: PEM parsed, roots loaded, names parsed) and
//! each engine thread builds its own `ClientConfig` from it (`TlsSetup::thread`), so that its
//! session cache (resumption) is its own and no lock is shared between threads.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, Resumption, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
pub use rustls::pki_types::ServerName;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, HandshakeKind, RootCertStore,
    SignatureScheme,
};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use AlertDescription as A;

use crate::stats::ErrorKind;

mod facts;
use facts::CertFacts;

/// What the pre-flight probe notes during its handshake: whether the server asked for a client
/// certificate, and the server's certificate (DER) as presented.
#[derive(Clone, Default)]
struct Noted {
    asked: Arc<AtomicBool>,
    certificate: Arc<Mutex<Option<Vec<u8>>>>,
}

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

/// The webpki error inside a certificate error rustls did not name (`Other`).
fn webpki_error(e: &rustls::Error) -> Option<&webpki::Error> {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => other.0.downcast_ref::<webpki::Error>(),
        _ => None,
    }
}

/// Why the client certificate (`cert_pem`) and its key cannot be used, naming the field.
fn client_cert_error(e: &rustls::Error) -> String {
    match (webpki_error(e), e) {
        (Some(webpki::Error::UnsupportedCertVersion), _) => {
            "tls.cert_pem: is an X.509 v1 certificate; a v3 one is needed".into()
        }
        (_, rustls::Error::InconsistentKeys(_)) => {
            "tls.key_pem: is not the private key of the client certificate".into()
        }
        (_, rustls::Error::InvalidCertificate(why)) => {
            format!("tls.cert_pem: is not a usable client certificate ({})", words(&format!("{why:?}")))
        }
        _ => format!("tls.cert_pem: is not usable with its key ({})", words(&format!("{e:?}"))),
    }
}

/// `CaUsedAsEndEntity` -> "ca used as end entity" (the names of rustls's and webpki's variants).
fn words(name: &str) -> String {
    let bare = name.split(['(', ' ', '{']).next().unwrap_or(name);
    let mut out = String::new();
    for (i, c) in bare.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A time as a UTC date: "2026-11-26 15:20 UTC".
fn date(t: UnixTime) -> String {
    let secs = t.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // civil_from_days (H. Hinnant)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// Why the server's certificate was refused, in words. `has_ca`: roots were given (`ca_pem`,
/// which the caller names "the --cacert file"); `name`: the name the certificate was checked for.
fn certificate_words(why: &CertificateError, e: &rustls::Error, has_ca: bool, name: &str) -> String {
    use CertificateError as C;
    let cert = "the server's certificate";
    match (why, webpki_error(e)) {
        (C::UnknownIssuer, _) if has_ca => format!("{cert} is not signed by a CA in the --cacert file"),
        (C::UnknownIssuer, _) => format!("{cert} is not signed by a CA this system trusts"),
        (C::ExpiredContext { not_after, .. }, _) => format!("{cert} expired on {}", date(*not_after)),
        (C::Expired, _) => format!("{cert} has expired"),
        (C::NotValidYetContext { not_before, .. }, _) => format!("{cert} is not valid until {}", date(*not_before)),
        (C::NotValidYet, _) => format!("{cert} is not valid yet"),
        (C::NotValidForNameContext { presented, .. }, _) if !presented.is_empty() => {
            let names: Vec<&str> = presented.iter().map(|p| presented_name(p)).collect();
            format!("the certificate is for {}, not {name}", names.join(", "))
        }
        (C::NotValidForName | C::NotValidForNameContext { .. }, _) => format!("the certificate is not for {name}"),
        (C::BadSignature, _) => format!("{cert} has a bad signature"),
        (C::Revoked, _) => format!("{cert} has been revoked"),
        (C::BadEncoding, _) => format!("{cert} is not valid DER"),
        (C::InvalidPurpose | C::InvalidPurposeContext { .. }, _) => {
            format!("{cert} is not for a TLS server (its extended key usage)")
        }
        (_, Some(webpki::Error::CaUsedAsEndEntity)) if has_ca => {
            format!("{cert} is a CA certificate (CA:TRUE), not one in the --cacert file")
        }
        (_, Some(webpki::Error::CaUsedAsEndEntity)) => {
            format!("{cert} is a CA certificate (CA:TRUE), trusted only when given itself with --cacert")
        }
        (_, Some(webpki::Error::UnsupportedCertVersion)) => {
            format!("{cert} is an X.509 v1 certificate; a v3 one is needed")
        }
        (_, Some(other)) => format!("{cert} is not accepted: {}", words(&format!("{other:?}"))),
        (other, None) => format!("{cert} is not accepted: {}", words(&format!("{other:?}"))),
    }
}

/// A name of a certificate as rustls presents it (`DnsName("a.test")`, `IpAddress(127.0.0.1)`):
/// the bare name.
fn presented_name(presented: &str) -> &str {
    for (start, end) in [("DnsName(\"", "\")"), ("IpAddress(", ")")] {
        if let Some(bare) = presented.strip_prefix(start).and_then(|p| p.strip_suffix(end)) {
            return bare;
        }
    }
    presented
}

/// A one-line reason for a TLS error, in words (see `certificate_words` for `has_ca` and `name`).
fn describe(e: &io::Error, has_ca: bool, name: &str) -> String {
    let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return match e.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => {
                "the server closed the connection during the TLS handshake".into()
            }
            kind => format!("the TLS handshake failed ({})", words(&format!("{kind:?}"))),
        };
    };
    match tls {
        rustls::Error::InvalidCertificate(why) => certificate_words(why, tls, has_ca, name),
        rustls::Error::AlertReceived(A::CertificateRequired) => "the server requires a client certificate".into(),
        rustls::Error::AlertReceived(alert) if is_certificate_error(tls) => {
            format!("the server refused the client certificate (its alert: {})", words(&format!("{alert:?}")))
        }
        rustls::Error::AlertReceived(alert) => {
            format!("the server ended the TLS handshake (its alert: {})", words(&format!("{alert:?}")))
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "no TLS server there (its answer is not TLS)".into()
        }
        rustls::Error::PeerIncompatible(why) => {
            format!("the server and pounder have no TLS version or cipher in common ({})", words(&format!("{why:?}")))
        }
        rustls::Error::NoCertificatesPresented => "the server presented no certificate".into(),
        rustls::Error::PeerMisbehaved(why) => {
            format!("the server broke the TLS protocol ({})", words(&format!("{why:?}")))
        }
        other => format!("the TLS handshake failed ({})", words(&format!("{other:?}"))),
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

/// One handshake to `tcp` (addresses tried in order) as a run would make it, without a request:
/// None when it succeeds or no address accepts the connection (the run counts that as it
/// does for plain HTTP), else a one-line reason. When the server asks for a client certificate
/// and none is given, waits a moment for its refusal (TLS 1.3 sends it after the handshake).
/// A handshake that succeeded is closed as a client that is done closes it (close_notify, then
/// the server's end read), so that the server sees a connection that asked nothing: nothing it
/// logs as a request.
pub fn probe(
    tcp: &[std::net::SocketAddr],
    tls_name: &str,
    options: &TlsOptions,
    timeout: Duration,
) -> Result<Option<String>, String> {
    let setup = TlsSetup::new(options)?;
    let name = server_name(tls_name)?;
    let noted = Noted::default();
    let config = setup.config(Some(&noted))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tls probe: cannot start its runtime ({})", words(&format!("{:?}", e.kind()))))?;
    let failed = |e: &io::Error| {
        let certificate = noted.certificate.lock().ok().and_then(|mut c| c.take());
        let facts = certificate.as_deref().and_then(|der| {
            CertFacts::read(der).map(|f| (f, setup.pinned.iter().any(|c| c.as_ref() == der)))
        });
        reason(e, &facts, options, tls_name)
    };
    let outcome = rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        tokio::time::timeout(timeout, async {
            let mut stream = None;
            for sa in tcp {
                if let Ok(s) = TcpStream::connect(sa).await {
                    stream = Some(s);
                    break;
                }
            }
            let tcp = stream?;
            let mut tls = match TlsConnector::from(config).connect(name, tcp).await {
                Ok(s) => s,
                Err(e) => return Some(failed(&e)),
            };
            let mut buf = [0u8; 512];
            if noted.asked.load(Ordering::Relaxed) && options.cert_pem.is_none() {
                let wait = tokio::time::timeout(Duration::from_millis(300), tls.read(&mut buf)).await;
                if let Ok(Err(e)) = wait {
                    if error_kind(&e).is_some() {
                        return Some(failed(&e));
                    }
                }
            }
            // a clean close: close_notify, then what the server still sends (its session tickets,
            // its own close_notify) read to its end, so that closing sends no reset
            if tls.shutdown().await.is_ok() {
                let drain = async { while matches!(tls.read(&mut buf).await, Ok(n) if n > 0) {} };
                let _ = tokio::time::timeout(Duration::from_millis(200), drain).await;
            }
            None
        })
        .await
        .unwrap_or_else(|_| Some(format!("no TLS handshake within {:.1} s", timeout.as_secs_f64())))
    });
    Ok(outcome)
}

/// The reason of a failed probe: the certificate's key when rustls cannot use it in any case,
/// a self-signed certificate not given with `--cacert` (when its trust failed), else `describe`'s.
/// `facts`: the server's certificate as the probe saw it, and whether it is one of `ca_pem`'s.
fn reason(e: &io::Error, facts: &Option<(CertFacts, bool)>, options: &TlsOptions, name: &str) -> String {
    let has_ca = options.ca_pem.is_some();
    let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    if let Some((facts, pinned)) = facts {
        if let Some(problem) = facts.key_problem() {
            return problem;
        }
        let untrusted = matches!(tls, Some(rustls::Error::InvalidCertificate(why)) if is_trust(why, tls));
        if facts.self_signed && !pinned && !options.insecure && untrusted {
            return if has_ca {
                "the server's certificate is self-signed, and not one in the --cacert file".into()
            } else {
                "the server's certificate is self-signed: no CA vouches for it".into()
            };
        }
    }
    describe(e, has_ca, name)
}

/// Whether a certificate error is one of trust (no CA found for it, or none that can vouch for it),
/// not of its dates, names, use or form.
fn is_trust(why: &CertificateError, e: Option<&rustls::Error>) -> bool {
    use CertificateError as C;
    match why {
        C::Expired
        | C::ExpiredContext { .. }
        | C::NotValidYet
        | C::NotValidYetContext { .. }
        | C::NotValidForName
        | C::NotValidForNameContext { .. }
        | C::InvalidPurpose
        | C::InvalidPurposeContext { .. }
        | C::Revoked
        | C::BadEncoding => false,
        C::Other(_) => !matches!(e.and_then(webpki_error), Some(webpki::Error::UnsupportedCertVersion)),
        _ => true,
    }
}

/// Accepts any server certificate, still checking that the server holds its key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The roots of `ca_pem`, and more: a server certificate that is byte for byte one of them is
/// trusted as it is (a pinned certificate, as curl takes a self-signed one given as its CA file),
/// although it says CA:TRUE (`openssl req -x509` makes such certificates), which webpki refuses
/// as a server's (CaUsedAsEndEntity). Its dates are checked all the same (webpki checks them
/// before it looks at CA:TRUE), and so are its name and the handshake's signatures.
#[derive(Debug)]
struct Pinned {
    inner: Arc<WebPkiServerVerifier>,
    pinned: Arc<Vec<CertificateDer<'static>>>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(e)
                if matches!(webpki_error(&e), Some(webpki::Error::CaUsedAsEndEntity))
                    && self.pinned.iter().any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                rustls::client::verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A verifier that keeps the server's certificate as presented (the probe's, for its reasons).
#[derive(Debug)]
struct Noting {
    inner: Arc<dyn ServerCertVerifier>,
    certificate: Arc<Mutex<Option<Vec<u8>>>>,
}

impl ServerCertVerifier for Noting {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut kept) = self.certificate.lock() {
            *kept = Some(end_entity.as_ref().to_vec());
        }
        self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

/// The configured client certificate resolver, noting whether the server asked for one.
#[derive(Debug)]
struct Asked {
    inner: Arc<dyn ResolvesClientCert>,
    asked: Arc<AtomicBool>,
}

impl ResolvesClientCert for Asked {
    fn resolve(&self, hints: &[&[u8]], schemes: &[SignatureScheme]) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.inner.resolve(hints, schemes)
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
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
