//! Who may do what: the roles of Strata's API, the signed tokens that carry
//! them, and the keys that sign and check those tokens.
//!
//! A token is a JWT signed with Ed25519 (`alg: EdDSA`), issued by
//! `strata`, naming its subject, its role and when it expires. The nodes
//! (and the gateway) hold only the public keys, as a JWKS file; whoever
//! holds the private key (`strata auth token`) makes tokens.

mod claims;
mod error;
mod files;
mod keys;
mod role;

pub use claims::{Claims, ISSUER};
pub use error::{AuthError, TokenError};
pub use files::{JWKS_FILE, KeyFiles, SIGNING_KEY_FILE};
pub use keys::{KeyPair, Signer, Verifier};
pub use role::Role;
