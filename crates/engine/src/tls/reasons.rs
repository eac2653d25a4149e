//! A refused handshake in words: the server's certificate (its trust, dates, name, use, form),
//! the client certificate and its key, the server's alerts.

use std::io;

use rustls::pki_types::UnixTime;
use rustls::{AlertDescription as A, CertificateError};

use super::is_certificate_error;

/// The webpki error inside a certificate error rustls did not name (`Other`).
pub(super) fn webpki_error(e: &rustls::Error) -> Option<&webpki::Error> {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => other.0.downcast_ref::<webpki::Error>(),
        _ => None,
    }
}

/// Why the client certificate (`cert_pem`) and its key cannot be used, naming the field.
pub(super) fn client_cert_error(e: &rustls::Error) -> String {
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
pub(super) fn words(name: &str) -> String {
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
pub(super) fn describe(e: &io::Error, has_ca: bool, name: &str) -> String {
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

/// Whether a certificate error is one of trust (no CA found for it, or none that can vouch for it),
/// not of its dates, names, use or form.
pub(super) fn is_trust(why: &CertificateError, e: Option<&rustls::Error>) -> bool {
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
