//! HTTPS against a real (in-process) rustls server on loopback, with certificates made here.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pounder_engine::{run, tls_probe, Addr, Run, Spec, Target, TlsOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::Value;

/// A CA and a server certificate it signed, for `localhost` and 127.0.0.1.
struct Pki {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
    Pki {
        ca_pem: ca_cert.pem(),
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    }
}

/// A TLS server answering each request with a 5-byte body (closing after `Connection: close`);
/// counts the requests and the connections it accepted.
fn tls_server(pki: &Pki) -> (String, Arc<AtomicU64>, Arc<AtomicU64>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(pki.chain.clone(), pki.key.clone_key())
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (requests, conns) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (r, c) = (Arc::clone(&requests), Arc::clone(&conns));
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            c.fetch_add(1, Ordering::SeqCst);
            let (config, r) = (Arc::clone(&config), Arc::clone(&r));
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                serve(rustls::StreamOwned::new(conn, tcp), &r);
            });
        }
    });
    (addr, requests, conns)
}

fn serve(mut s: impl Read + Write, count: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let close = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase().contains("connection: close");
        buf.drain(..end);
        count.fetch_add(1, Ordering::SeqCst);
        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello").is_err() || s.flush().is_err() || close {
            return;
        }
    }
}

fn spec(addr: &str, name: &str, tls: TlsOptions, keepalive: bool) -> Spec {
    let close = if keepalive { "" } else { "Connection: close\r\n" };
    let target = Target {
        addr: Addr::Tcp(vec![addr.parse().unwrap()]),
        request: format!("GET / HTTP/1.1\r\nHost: {name}\r\n{close}\r\n").into_bytes(),
        head: false,
        weight: 1,
        tls_name: Some(name.to_string()),
    };
    let mut s = Spec::new(vec![target]);
    s.connections = 2;
    s.threads = 1;
    s.requests = Some(20);
    s.keepalive = keepalive;
    s.timeout = Duration::from_secs(10);
    s.tls = Some(tls);
    s
}

fn trusting(pki: &Pki) -> TlsOptions {
    TlsOptions { ca_pem: Some(pki.ca_pem.clone().into_bytes()), ..TlsOptions::default() }
}

fn result(s: Spec) -> Value {
    serde_json::from_str(&run(s).unwrap()).unwrap()
}

#[test]
fn one_handshake_per_connection_with_resumption() {
    let pki = pki();
    let (addr, requests, conns) = tls_server(&pki);
    let v = result(spec(&addr, "localhost", trusting(&pki), false));
    assert_eq!(v["requests"]["complete"], 20, "{v}");
    assert_eq!(requests.load(Ordering::SeqCst), 20);
    assert_eq!(conns.load(Ordering::SeqCst), 20);
    assert_eq!(v["tls"]["handshakes"], 20);
    assert_eq!(v["phases"]["tls"]["count"], 20);
    // the first connections make full handshakes, the later ones resume
    let resumed = v["tls"]["resumed"].as_u64().unwrap();
    assert!((1..20).contains(&resumed), "{v}");
    // keep-alive: one handshake per connection
    let v = result(spec(&addr, "127.0.0.1", trusting(&pki), true));
    assert_eq!(v["requests"]["complete"], 20);
    assert_eq!(v["tls"]["handshakes"], 2);
    assert_eq!(v["connections"]["opened"], 2);
}

#[test]
fn resumption_off_makes_full_handshakes() {
    let pki = pki();
    let (addr, _, _) = tls_server(&pki);
    let v = result(spec(&addr, "localhost", TlsOptions { resume: false, ..trusting(&pki) }, false));
    assert_eq!(v["requests"]["complete"], 20);
    assert_eq!((v["tls"]["handshakes"].as_u64(), v["tls"]["resumed"].as_u64()), (Some(20), Some(0)));
}

#[test]
fn untrusted_certificates_fail_before_a_request_is_sent() {
    let pki = pki();
    let (addr, requests, _) = tls_server(&pki);
    let other = self::pki();
    let mut s = spec(&addr, "localhost", trusting(&other), true);
    s.requests = Some(5);
    let v = result(s.clone());
    assert_eq!(v["errors"]["tls_certificate"], 5, "{v}");
    assert_eq!((v["requests"]["complete"].as_u64(), v["bytes"]["sent"].as_u64()), (Some(0), Some(0)));
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    // the wrong name: refused too
    let v = result(spec(&addr, "example.test", trusting(&pki), true));
    assert_eq!(v["errors"]["tls_certificate"], 20);
    // the system's roots do not know this CA
    s.tls = None;
    assert_eq!(result(s.clone())["errors"]["tls_certificate"], 5);
    // insecure: any certificate
    s.tls = Some(TlsOptions { insecure: true, ..TlsOptions::default() });
    assert_eq!(result(s)["requests"]["complete"], 5);
    assert_eq!(requests.load(Ordering::SeqCst), 5);
}

#[test]
fn a_plain_server_is_a_handshake_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut b = [0u8; 512];
            let _ = s.read(&mut b);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let mut s = spec(&addr, "localhost", TlsOptions::default(), true);
    s.requests = Some(3);
    let v = result(s);
    assert_eq!(v["errors"]["tls_handshake"], 3, "{v}");
    let why = tls_probe(&[addr.parse().unwrap()], "localhost", &TlsOptions::default(), Duration::from_secs(5));
    assert!(why.unwrap().unwrap().contains("no TLS server there"));
}

#[test]
fn the_probe_says_why() {
    let pki = pki();
    let (addr, requests, conns) = tls_server(&pki);
    let sa = [addr.parse().unwrap()];
    let t = Duration::from_secs(5);
    assert_eq!(tls_probe(&sa, "localhost", &trusting(&pki), t), Ok(None));
    let why = tls_probe(&sa, "localhost", &TlsOptions::default(), t).unwrap().unwrap();
    assert_eq!(why, "certificate not trusted (UnknownIssuer)");
    let why = tls_probe(&sa, "example.test", &trusting(&pki), t).unwrap().unwrap();
    assert!(why.starts_with("certificate not trusted (NotValidForName"), "{why}");
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    assert_eq!(conns.load(Ordering::SeqCst), 3);
}

#[test]
fn bad_options_name_their_field() {
    let mut s = spec("127.0.0.1:1", "localhost", TlsOptions::default(), true);
    let err = |s: &Spec| Run::start(s.clone()).err().unwrap_or_default();
    s.tls = Some(TlsOptions { ca_pem: Some(b"nonsense".to_vec()), ..TlsOptions::default() });
    assert!(err(&s).starts_with("tls.ca_pem: "), "{}", err(&s));
    let pki = pki();
    let cert = Some(pki.ca_pem.clone().into_bytes());
    s.tls = Some(TlsOptions { cert_pem: cert.clone(), key_pem: Some(b"nope".to_vec()), ..TlsOptions::default() });
    assert!(err(&s).starts_with("tls.key_pem: "), "{}", err(&s));
    s.tls = None;
    s.targets[0].tls_name = Some("bad name!".into());
    assert!(err(&s).contains("tls_name"), "{}", err(&s));
    s.targets[0].tls_name = Some("localhost".into());
    s.targets[0].addr = Addr::Unix("/nonexistent".into());
    assert!(err(&s).contains("tls_name needs a tcp address"));
}
