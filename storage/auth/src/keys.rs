//! Ed25519 keys: a pair made by `strata auth keygen`, the private half
//! signing tokens ([`Signer`]), the public half, as a JWKS file, checking
//! them ([`Verifier`]).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, spki::der::pem::LineEnding};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{AuthError, Claims, ISSUER, Role, TokenError};

/// How far a token's times may be off this node's clock.
const LEEWAY_S: u64 = 30;

/// A new key pair.
pub struct KeyPair {
    key: SigningKey,
}

/// One public key as a JWKS holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Jwk {
    kty: String,
    crv: String,
    x: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alg: Option<String>,
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Jwks {
    keys: Vec<Jwk>,
}

/// The id a public key goes by: the first 8 bytes of its SHA-256, in hex.
fn key_id(public: &[u8; 32]) -> String {
    Sha256::digest(public)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl KeyPair {
    pub fn generate() -> Self {
        KeyPair {
            key: SigningKey::from_bytes(&rand::random::<[u8; 32]>()),
        }
    }

    /// The private key, PKCS#8 PEM: whoever holds it makes tokens.
    pub fn private_pem(&self) -> String {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("an Ed25519 key encodes")
            .to_string()
    }

    /// The public key as a JWKS document, for the nodes and the gateway.
    pub fn jwks_json(&self) -> String {
        let public = self.key.verifying_key().to_bytes();
        let jwks = Jwks {
            keys: vec![Jwk {
                kty: "OKP".into(),
                crv: "Ed25519".into(),
                x: URL_SAFE_NO_PAD.encode(public),
                kid: Some(key_id(&public)),
                alg: Some("EdDSA".into()),
                usage: Some("sig".into()),
            }],
        };
        serde_json::to_string_pretty(&jwks).expect("a JWKS encodes")
    }

    /// A signer with this pair's private key.
    pub fn signer(&self) -> Signer {
        Signer::from_key(&self.key)
    }
}

/// Makes tokens with a private key.
pub struct Signer {
    key: EncodingKey,
    kid: String,
}

impl Signer {
    fn from_key(key: &SigningKey) -> Self {
        let der = key.to_pkcs8_der().expect("an Ed25519 key encodes");
        Signer {
            key: EncodingKey::from_ed_der(der.as_bytes()),
            kid: key_id(&key.verifying_key().to_bytes()),
        }
    }

    /// The signer of the PKCS#8 PEM private key in `pem` (read from `path`,
    /// named in errors).
    pub fn from_pem(pem: &str, path: &str) -> Result<Self, AuthError> {
        let key = SigningKey::from_pkcs8_pem(pem).map_err(|e| AuthError::SigningKey {
            path: path.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self::from_key(&key))
    }

    /// Reads the private key in the file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, AuthError> {
        let shown = path.display().to_string();
        let pem = std::fs::read_to_string(path).map_err(|source| AuthError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::from_pem(&pem, &shown)
    }

    /// A token for `subject` with `role`, valid for `ttl` from now.
    pub fn sign(&self, subject: &str, role: Role, ttl: Duration) -> Result<String, AuthError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let claims = Claims {
            sub: subject.to_string(),
            role,
            iss: ISSUER.to_string(),
            iat: now,
            exp: now.saturating_add(ttl.as_secs()),
        };
        self.sign_claims(&claims)
    }

    /// A token saying `claims`, as they are.
    pub fn sign_claims(&self, claims: &Claims) -> Result<String, AuthError> {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).map_err(|e| AuthError::Sign(e.to_string()))
    }
}

/// Checks tokens against the public keys of a JWKS.
pub struct Verifier {
    keys: Vec<(Option<String>, DecodingKey)>,
    validation: Validation,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self
            .keys
            .iter()
            .map(|(kid, _)| kid.as_deref().unwrap_or("-"))
            .collect();
        f.debug_struct("Verifier").field("keys", &kids).finish()
    }
}

impl Verifier {
    /// The verifier of the Ed25519 keys in the JWKS document `json` (read
    /// from `path`, named in errors). It must hold at least one.
    pub fn from_jwks(json: &str, path: &str) -> Result<Self, AuthError> {
        let bad = |reason: String| AuthError::Jwks {
            path: path.to_string(),
            reason,
        };
        let jwks: Jwks = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        if jwks.keys.is_empty() {
            return Err(bad("it holds no key".into()));
        }
        let mut keys = Vec::with_capacity(jwks.keys.len());
        for (i, jwk) in jwks.keys.into_iter().enumerate() {
            if jwk.kty != "OKP" || jwk.crv != "Ed25519" {
                return Err(bad(format!(
                    "key {i} is {} {}; only OKP Ed25519 keys are taken",
                    jwk.kty, jwk.crv
                )));
            }
            let x = URL_SAFE_NO_PAD
                .decode(&jwk.x)
                .ok()
                .filter(|x| x.len() == 32)
                .ok_or_else(|| bad(format!("key {i}'s x is not 32 bytes of base64url")))?;
            let key = DecodingKey::from_ed_der(&x);
            keys.push((jwk.kid, key));
        }
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        validation.leeway = LEEWAY_S;
        Ok(Verifier { keys, validation })
    }

    /// Reads the JWKS file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, AuthError> {
        let shown = path.display().to_string();
        let json = std::fs::read_to_string(path).map_err(|source| AuthError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::from_jwks(&json, &shown)
    }

    /// What `token` says, once its signature, issuer and times check out.
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
        if header.alg != Algorithm::EdDSA {
            return Err(TokenError::Malformed(format!(
                "signed with {:?}, not EdDSA",
                header.alg
            )));
        }
        let candidates: Vec<&DecodingKey> = self
            .keys
            .iter()
            .filter(|(kid, _)| match (&header.kid, kid) {
                (Some(wanted), Some(kid)) => wanted == kid,
                _ => true,
            })
            .map(|(_, key)| key)
            .collect();
        if candidates.is_empty() {
            return Err(TokenError::UnknownKey);
        }
        let mut refused = TokenError::BadSignature;
        for key in candidates {
            match jsonwebtoken::decode::<Claims>(token, key, &self.validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => match e.kind() {
                    ErrorKind::InvalidSignature => refused = TokenError::BadSignature,
                    ErrorKind::ExpiredSignature => return Err(TokenError::Expired),
                    other => return Err(TokenError::Malformed(format!("{other:?}"))),
                },
            }
        }
        Err(refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_signed_with_the_private_key_verifies_with_the_public_one() {
        let pair = KeyPair::generate();
        let verifier = Verifier::from_jwks(&pair.jwks_json(), "test").unwrap();
        let signer = Signer::from_pem(&pair.private_pem(), "test").unwrap();
        let token = signer
            .sign("alice", Role::Write, Duration::from_secs(60))
            .unwrap();
        let claims = verifier.verify(&token).unwrap();
        assert_eq!((claims.sub.as_str(), claims.role), ("alice", Role::Write));
        assert_eq!(claims.iss, ISSUER);
        assert_eq!(claims.exp - claims.iat, 60);
    }

    #[test]
    fn a_token_of_another_key_an_expired_or_changed_one_is_refused() {
        // Proves: another pair's token (its kid unknown, and with the kid
        // taken away, a signature that does not verify), an expired token,
        // one whose payload was changed (a role raised), another issuer and
        // garbage are all refused, each with its reason.
        let pair = KeyPair::generate();
        let verifier = Verifier::from_jwks(&pair.jwks_json(), "test").unwrap();
        let stranger = KeyPair::generate().signer();
        let theirs = stranger
            .sign("mallory", Role::Admin, Duration::from_secs(60))
            .unwrap();
        assert_eq!(verifier.verify(&theirs), Err(TokenError::UnknownKey));

        let mut no_kid = Header::new(Algorithm::EdDSA);
        no_kid.kid = None;
        let claims = Claims {
            sub: "mallory".into(),
            role: Role::Admin,
            iss: ISSUER.into(),
            iat: 0,
            exp: u64::MAX / 2,
        };
        let anonymous = jsonwebtoken::encode(&no_kid, &claims, &stranger.key).unwrap();
        assert_eq!(verifier.verify(&anonymous), Err(TokenError::BadSignature));

        let signer = pair.signer();
        let expired = signer
            .sign_claims(&Claims {
                iat: 1,
                exp: 2,
                ..claims.clone()
            })
            .unwrap();
        assert_eq!(verifier.verify(&expired), Err(TokenError::Expired));

        let reader = signer
            .sign("bob", Role::Read, Duration::from_secs(60))
            .unwrap();
        let parts: Vec<&str> = reader.split('.').collect();
        let mut payload: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        payload["role"] = "admin".into();
        let raised = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(payload.to_string()),
            parts[2]
        );
        assert_eq!(verifier.verify(&raised), Err(TokenError::BadSignature));

        let elsewhere = signer
            .sign_claims(&Claims {
                iss: "someone-else".into(),
                ..claims
            })
            .unwrap();
        assert!(matches!(
            verifier.verify(&elsewhere),
            Err(TokenError::Malformed(_))
        ));
        assert!(matches!(
            verifier.verify("not a token"),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn a_jwks_without_an_ed25519_key_is_refused() {
        for bad in [
            r#"{"keys": []}"#,
            r#"{"keys": [{"kty": "RSA", "crv": "", "x": ""}]}"#,
            r#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "c2hvcnQ"}]}"#,
            "[]",
        ] {
            assert!(Verifier::from_jwks(bad, "test").is_err(), "{bad}");
        }
    }
}
