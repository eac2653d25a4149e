//! The verifiers a configuration may take instead of rustls's own: any certificate (`insecure`),
//! the `ca_pem` roots with their certificates pinned, and the probe's, which note the server's
//! certificate and whether it asked for a client certificate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::reasons::webpki_error;

/// What the pre-flight probe notes during its handshake: whether the server asked for a client
/// certificate, and the server's certificate (DER) as presented.
#[derive(Clone, Default)]
pub(super) struct Noted {
    pub(super) asked: Arc<AtomicBool>,
    pub(super) certificate: Arc<Mutex<Option<Vec<u8>>>>,
}

/// The methods of a verifier around another (its `inner`) that checks the handshake's signatures
/// as the other does.
macro_rules! signatures_as_inner {
    () => {
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
    };
}

/// Accepts any server certificate, still checking that the server holds its key.
#[derive(Debug)]
pub(super) struct AnyCertificate(pub(super) Arc<CryptoProvider>);

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
pub(super) struct Pinned {
    pub(super) inner: Arc<WebPkiServerVerifier>,
    pub(super) pinned: Arc<Vec<CertificateDer<'static>>>,
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

    signatures_as_inner!();
}

/// A verifier that keeps the server's certificate as presented (the probe's, for its reasons).
#[derive(Debug)]
pub(super) struct Noting {
    pub(super) inner: Arc<dyn ServerCertVerifier>,
    pub(super) certificate: Arc<Mutex<Option<Vec<u8>>>>,
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

    signatures_as_inner!();
}

/// The configured client certificate resolver, noting whether the server asked for one.
#[derive(Debug)]
pub(super) struct Asked {
    pub(super) inner: Arc<dyn ResolvesClientCert>,
    pub(super) asked: Arc<AtomicBool>,
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
