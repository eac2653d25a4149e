//! The pre-flight probe: one handshake as a run would make it, without a request, and why it
//! failed in words.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::facts::CertFacts;
use super::reasons::{describe, is_trust, words};
use super::verifiers::Noted;
use super::{error_kind, server_name, TlsOptions, TlsSetup};

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
