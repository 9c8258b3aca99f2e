//! How byte strings appear in JSON: UTF-8 text by default, base64 when the
//! client asks for it or when some byte string is not valid UTF-8.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;

/// How byte strings are written in JSON. `utf8`: plain UTF-8 strings.
/// `base64`: standard base64 with padding (RFC 4648 section 4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    #[default]
    Utf8,
    Base64,
}

impl Encoding {
    /// Decodes a JSON or query string into bytes.
    pub fn decode(self, s: &str, field: &str) -> Result<Vec<u8>, ApiError> {
        match self {
            Encoding::Utf8 => Ok(s.as_bytes().to_vec()),
            Encoding::Base64 => STANDARD
                .decode(s)
                .map_err(|e| ApiError::invalid(format!("`{field}` is not valid base64: {e}"))),
        }
    }

    /// The encoding for a response holding `items`: the requested one, unless
    /// UTF-8 was asked for and some item is not UTF-8.
    pub fn for_output<'a>(self, mut items: impl Iterator<Item = &'a [u8]>) -> Encoding {
        match self {
            Encoding::Base64 => Encoding::Base64,
            Encoding::Utf8 if items.all(|b| std::str::from_utf8(b).is_ok()) => Encoding::Utf8,
            Encoding::Utf8 => Encoding::Base64,
        }
    }

    /// Renders bytes for a response chosen with [`for_output`](Self::for_output).
    pub fn encode(self, b: &[u8]) -> String {
        match self {
            Encoding::Utf8 => String::from_utf8_lossy(b).into_owned(),
            Encoding::Base64 => STANDARD.encode(b),
        }
    }
}

/// Page tokens are opaque: URL-safe base64 of the next start key.
pub fn encode_page_token(b: &[u8]) -> Option<String> {
    (!b.is_empty()).then(|| URL_SAFE_NO_PAD.encode(b))
}

pub fn decode_page_token(s: &str) -> Result<Vec<u8>, ApiError> {
    URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| ApiError::invalid("page_token is not a token this server issued"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_utf8_output_switches_to_base64() {
        let items: [&[u8]; 2] = [b"ok", &[0xff, 0xfe]];
        assert_eq!(
            Encoding::Utf8.for_output(items.into_iter()),
            Encoding::Base64
        );
        let items: [&[u8]; 1] = [b"ok"];
        assert_eq!(Encoding::Utf8.for_output(items.into_iter()), Encoding::Utf8);
    }

    #[test]
    fn bad_base64_is_invalid_argument() {
        let e = Encoding::Base64.decode("***", "value").unwrap_err();
        assert_eq!(e.code, crate::error::ErrorCode::InvalidArgument);
        assert_eq!(Encoding::Base64.decode("aGk=", "value").unwrap(), b"hi");
    }

    #[test]
    fn page_tokens_round_trip() {
        let t = encode_page_token(&[0, 1, 255]).unwrap();
        assert_eq!(decode_page_token(&t).unwrap(), vec![0, 1, 255]);
        assert_eq!(encode_page_token(b""), None);
    }
}
