//! What the pre-flight probe reads of the server's certificate when its handshake fails, to name
//! the real cause: whether it is self-signed (issuer and subject the same name) and its public
//! key (an RSA key's size, an EC key's curve), which rustls with the ring provider refuses outside
//! RSA 2048-8192 bits, EC P-256 and P-384, and Ed25519, whatever the trust settings (even with
//! `--insecure`, which skips the checks of trust, not those of the handshake's signatures).
//!
//! A few lines of DER walking over the certificate's fixed leading fields; anything unexpected
//! reads as "nothing known" (None), never as a guess.

/// The server's certificate as the reasons need it.
#[derive(Debug, PartialEq, Eq)]
pub struct CertFacts {
    /// Issuer and subject are the same name.
    pub self_signed: bool,
    pub key: Key,
}

/// The certificate's public key.
#[derive(Debug, PartialEq, Eq)]
pub enum Key {
    Rsa { bits: usize },
    Ec { curve: &'static str },
    Other,
}

const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const CURVES: [(&[u8], &str); 4] = [
    (&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07], "P-256"),
    (&[0x2b, 0x81, 0x04, 0x00, 0x22], "P-384"),
    (&[0x2b, 0x81, 0x04, 0x00, 0x23], "P-521"),
    (&[0x2b, 0x81, 0x04, 0x00, 0x0a], "secp256k1"),
];

/// One DER element: (tag, contents, the rest after it).
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        (rest[..n].iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b)), &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

impl CertFacts {
    /// The facts of a DER certificate; None when it does not read as one.
    pub fn read(der: &[u8]) -> Option<CertFacts> {
        let (_, cert, _) = element(der)?;
        let (_, tbs, _) = element(cert)?;
        let (tag, _, mut rest) = element(tbs)?;
        if tag == 0xa0 {
            rest = element(rest)?.2; // the version came first: this was the serial number
        }
        let (_, _, rest) = element(rest)?; // the signature algorithm
        let (_, issuer, rest) = element(rest)?;
        let (_, _, rest) = element(rest)?; // the validity
        let (_, subject, rest) = element(rest)?;
        let (_, spki, _) = element(rest)?;
        Some(CertFacts { self_signed: issuer == subject, key: key(spki).unwrap_or(Key::Other) })
    }

    /// Why rustls cannot use this certificate's key, whatever the trust settings; None when it can.
    pub fn key_problem(&self) -> Option<String> {
        let cert = "the server's certificate";
        let engine = "pounder's TLS engine (rustls) accepts";
        match self.key {
            Key::Rsa { bits } if !(2048..=8192).contains(&bits) => Some(format!(
                "{cert} has a {bits}-bit RSA key: {engine} RSA keys of 2048 to 8192 bits only, even with --insecure"
            )),
            Key::Ec { curve } if curve != "P-256" && curve != "P-384" => Some(format!(
                "{cert} has an EC key on the curve {curve}: {engine} P-256 and P-384 only, even with --insecure"
            )),
            _ => None,
        }
    }
}

fn key(spki: &[u8]) -> Option<Key> {
    let (_, algorithm, rest) = element(spki)?;
    let (_, oid, params) = element(algorithm)?;
    if oid == RSA {
        let (tag, bits, _) = element(rest)?;
        if tag != 0x03 || bits.first() != Some(&0) {
            return None;
        }
        let (_, public, _) = element(&bits[1..])?;
        let (_, modulus, _) = element(public)?;
        let first = modulus.iter().position(|&b| b != 0)?;
        let size = (modulus.len() - first) * 8 - modulus[first].leading_zeros() as usize;
        return Some(Key::Rsa { bits: size });
    }
    if oid == EC {
        let (_, curve, _) = element(params)?;
        let name = CURVES.iter().find(|(c, _)| *c == curve).map_or("(an unnamed one)", |(_, n)| n);
        return Some(Key::Ec { curve: name });
    }
    Some(Key::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(alg: &'static rcgen::SignatureAlgorithm, same_name: bool) -> Vec<u8> {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        if same_name {
            return params.self_signed(&key).unwrap().der().to_vec();
        }
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(rcgen::DnType::CommonName, "a CA");
        let ca = ca.self_signed(&ca_key).unwrap();
        params.signed_by(&key, &ca, &ca_key).unwrap().der().to_vec()
    }

    #[test]
    fn self_signed_and_keys() {
        let p256 = CertFacts::read(&cert(&rcgen::PKCS_ECDSA_P256_SHA256, true)).unwrap();
        assert_eq!(p256, CertFacts { self_signed: true, key: Key::Ec { curve: "P-256" } });
        assert_eq!(p256.key_problem(), None);
        let p384 = CertFacts::read(&cert(&rcgen::PKCS_ECDSA_P384_SHA384, false)).unwrap();
        assert_eq!(p384, CertFacts { self_signed: false, key: Key::Ec { curve: "P-384" } });
        let ed = CertFacts::read(&cert(&rcgen::PKCS_ED25519, true)).unwrap();
        assert_eq!(ed.key, Key::Other);
        assert!(CertFacts::read(b"\x30\x03\x02\x01").is_none());
        assert!(CertFacts::read(b"").is_none());
        let small = CertFacts { self_signed: false, key: Key::Rsa { bits: 1024 } };
        assert!(small.key_problem().unwrap().contains("has a 1024-bit RSA key"));
        assert_eq!(CertFacts { self_signed: false, key: Key::Rsa { bits: 2048 } }.key_problem(), None);
        let p521 = CertFacts { self_signed: false, key: Key::Ec { curve: "P-521" } };
        assert!(p521.key_problem().unwrap().contains("the curve P-521"));
    }
}
