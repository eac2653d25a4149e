//! HTTPS against a real (in-process) rustls server on loopback, with certificates made here.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pounder_engine::{run, tls_probe, Addr, Io, Run, Spec, Target, TlsOptions};
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
    // a name of its own (CAs of the same name: a bad signature rather than an unknown issuer)
    let serial = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    ca.distinguished_name.push(rcgen::DnType::CommonName, format!("pounder test CA {serial}"));
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
    tls_server_corrupting(pki, u64::MAX)
}

/// `tls_server`, which after `after` responses on a connection sends a record that does not
/// decrypt (a TLS error in the middle of a connection, after its handshake).
fn tls_server_corrupting(pki: &Pki, after: u64) -> (String, Arc<AtomicU64>, Arc<AtomicU64>) {
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
                let mut stream = rustls::StreamOwned::new(conn, tcp);
                if serve(&mut stream, &r, after) {
                    let mut garbage = vec![0x17, 0x03, 0x03, 0x00, 0x20];
                    garbage.extend_from_slice(&[0xaa; 32]);
                    let _ = stream.sock.write_all(&garbage);
                    std::thread::sleep(Duration::from_millis(500));
                }
            });
        }
    });
    (addr, requests, conns)
}

/// Answers requests; true when it stopped after `after` responses (the connection left open).
fn serve(mut s: impl Read + Write, count: &AtomicU64, after: u64) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut answered = 0;
    loop {
        if answered == after {
            // the next request read, then a broken record instead of its answer
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            return true;
        }
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return false,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let close = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase().contains("connection: close");
        buf.drain(..end);
        count.fetch_add(1, Ordering::SeqCst);
        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello").is_err() || s.flush().is_err() || close {
            return false;
        }
        answered += 1;
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
    assert_eq!(why, "the server's certificate is not signed by a CA this system trusts");
    let why = tls_probe(&sa, "localhost", &trusting(&self::pki()), t).unwrap().unwrap();
    assert_eq!(why, "the server's certificate is not signed by a CA in the --cacert file");
    let why = tls_probe(&sa, "example.test", &trusting(&pki), t).unwrap().unwrap();
    assert_eq!(why, "the certificate is for localhost, 127.0.0.1, not example.test");
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    assert_eq!(conns.load(Ordering::SeqCst), 4);
}

/// A self-signed certificate as `openssl req -x509` makes it (CA:TRUE), for `names`, valid
/// until `not_after` (year).
fn self_signed(names: &[&str], not_after: i32) -> Pki {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(not_after, 1, 1);
    let cert = params.self_signed(&key).unwrap();
    Pki {
        ca_pem: cert.pem(),
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    }
}

#[test]
fn a_self_signed_ca_certificate_given_as_the_ca_is_trusted_as_it_is() {
    let pinned = self_signed(&["localhost", "127.0.0.1"], 2100);
    let (addr, requests, _) = tls_server(&pinned);
    let sa = [addr.parse().unwrap()];
    let t = Duration::from_secs(5);
    assert_eq!(tls_probe(&sa, "localhost", &trusting(&pinned), t), Ok(None));
    let v = result(spec(&addr, "127.0.0.1", trusting(&pinned), true));
    assert_eq!((v["requests"]["complete"].as_u64(), v["tls"]["handshakes"].as_u64()), (Some(20), Some(2)), "{v}");
    assert_eq!(requests.load(Ordering::SeqCst), 20);
    // its name is still checked
    let why = tls_probe(&sa, "example.test", &trusting(&pinned), t).unwrap().unwrap();
    assert_eq!(why, "the certificate is for localhost, 127.0.0.1, not example.test");
    // another CA:TRUE certificate than the one given is not
    let other = self_signed(&["localhost"], 2100);
    let why = tls_probe(&sa, "localhost", &trusting(&other), t).unwrap().unwrap();
    assert_eq!(why, "the server's certificate is self-signed, and not one in the --cacert file");
    let why = tls_probe(&sa, "localhost", &TlsOptions::default(), t).unwrap().unwrap();
    assert!(why.starts_with("the server's certificate is "), "{why}");
    // nor an expired one, given or not
    let expired = self_signed(&["localhost"], 2020);
    let (addr, _, _) = tls_server(&expired);
    let why = tls_probe(&[addr.parse().unwrap()], "localhost", &trusting(&expired), t).unwrap().unwrap();
    assert_eq!(why, "the server's certificate expired on 2020-01-01 00:00 UTC");
    assert_eq!(result(spec(&addr, "localhost", trusting(&expired), true))["errors"]["tls_certificate"], 20);
}

#[test]
fn a_tls_error_after_the_handshake_is_not_a_handshake_error() {
    let pki = pki();
    let (addr, requests, conns) = tls_server_corrupting(&pki, 5);
    let mut s = spec(&addr, "localhost", trusting(&pki), true);
    s.connections = 1;
    s.requests = Some(10);
    let v = result(s);
    // 5 answers, the 6th request's answer does not decrypt; a new connection: 4 more
    assert_eq!(v["requests"]["complete"], 9, "{v}");
    assert_eq!(v["errors"]["other"], 1, "{v}");
    assert_eq!((v["errors"]["tls_handshake"].as_u64(), v["errors"]["tls_certificate"].as_u64()), (Some(0), Some(0)));
    assert_eq!(v["tls"]["handshakes"], 2);
    assert_eq!((requests.load(Ordering::SeqCst), conns.load(Ordering::SeqCst)), (9, 2));
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
    // a client certificate in X.509 v1: said so, of the certificate
    let key = rcgen::KeyPair::generate().unwrap();
    let v1 = v1_certificate(&key);
    let key_pem = Some(key.serialize_pem().into_bytes());
    s.tls = Some(TlsOptions { cert_pem: Some(v1), key_pem, ..TlsOptions::default() });
    assert_eq!(err(&s), "tls.cert_pem: is an X.509 v1 certificate; a v3 one is needed");
    s.tls = None;
    s.targets[0].tls_name = Some("bad name!".into());
    assert!(err(&s).contains("tls_name"), "{}", err(&s));
    s.targets[0].tls_name = Some("localhost".into());
    s.targets[0].addr = Addr::Unix("/nonexistent".into());
    assert!(err(&s).contains("tls_name needs a tcp address"));
}

/// An X.509 v1 certificate of `key` (rcgen writes v3 only: its v3 DER with the version field and
/// the extensions taken out, the signature left as it is: only the version matters here).
fn v1_certificate(key: &rcgen::KeyPair) -> Vec<u8> {
    let params = rcgen::CertificateParams::new(vec!["client".to_string()]).unwrap();
    let der = params.self_signed(key).unwrap().der().to_vec();
    // DER: (tag, header length, content length) at `at`
    let tlv = |at: usize| -> (u8, usize, usize) {
        let first = der[at + 1] as usize;
        if first < 0x80 {
            (der[at], 2, first)
        } else {
            let n = first & 0x7f;
            (der[at], 2 + n, der[at + 2..at + 2 + n].iter().fold(0, |a, b| a << 8 | *b as usize))
        }
    };
    let (_, cert_h, _) = tlv(0);
    let (_, tbs_h, tbs_len) = tlv(cert_h);
    let tbs_start = cert_h + tbs_h;
    let mut fields = Vec::new();
    let mut at = tbs_start;
    while at < tbs_start + tbs_len {
        let (tag, h, len) = tlv(at);
        if tag != 0xa0 && tag != 0xa3 {
            fields.extend_from_slice(&der[at..at + h + len]); // not [0] version, not [3] extensions
        }
        at += h + len;
    }
    let seq = |content: &[u8]| -> Vec<u8> {
        let mut out = vec![0x30];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else if len < 0x100 {
            out.extend_from_slice(&[0x81, len as u8]);
        } else {
            out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
        }
        out.extend_from_slice(content);
        out
    };
    let mut rest = seq(&fields);
    rest.extend_from_slice(&der[tbs_start + tbs_len..]);
    let cert = seq(&rest);
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, cert);
    let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
    format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n")).into_bytes()
}

#[test]
fn https_takes_the_epoll_path_and_the_ring_is_refused() {
    let pki = pki();
    let (addr, requests, _) = tls_server(&pki);
    let mut s = spec(&addr, "localhost", trusting(&pki), true);
    s.io = Io::Auto;
    let v = result(s.clone());
    assert_eq!(v["io"], serde_json::json!({"path": "epoll", "reason": "auto: HTTPS runs on the epoll path only"}));
    assert_eq!(v["requests"]["complete"], 20);
    // asked for, the ring is refused at the start in one line, before anything is sent
    s.io = Io::Uring;
    let e = Run::start(s).err().expect("HTTPS on the ring is refused");
    assert_eq!(e, "io_uring: HTTPS runs on the epoll path only");
    assert_eq!(requests.load(Ordering::SeqCst), 20);
}
