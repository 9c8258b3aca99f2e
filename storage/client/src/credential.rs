//! The token a client sends with every call (`authorization: Bearer …`),
//! or none.

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// The channel every service client of a [`crate::Client`] calls through.
pub type Transport = InterceptedService<Channel, Credential>;

/// Adds the caller's token to each request, when it has one.
#[derive(Clone, Default)]
pub struct Credential(Option<MetadataValue<Ascii>>);

impl Credential {
    /// The credential of `token` (as `strata auth token` prints it); an
    /// error when it cannot be a header value.
    pub fn bearer(token: &str) -> Result<Self, String> {
        let value = format!("Bearer {}", token.trim());
        value
            .parse::<MetadataValue<Ascii>>()
            .map(|v| Credential(Some(v)))
            .map_err(|_| "the token holds characters a header cannot carry".to_string())
    }
}

impl Interceptor for Credential {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            req.metadata_mut().insert("authorization", value.clone());
        }
        Ok(req)
    }
}
