//! What a token says.

use serde::{Deserialize, Serialize};

use crate::Role;

/// The issuer every Strata token names.
pub const ISSUER: &str = "strata";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who the token was made for (a person or a program), for logs and
    /// the console's "signed in as".
    pub sub: String,
    pub role: Role,
    pub iss: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Expires at, seconds since the Unix epoch.
    pub exp: u64,
}
