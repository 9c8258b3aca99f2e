//! What an operator runs against a test cluster through its gateway: the
//! `strata` command line as admin, and the cluster's status.

use serde_json::Value;

use crate::Cluster;

impl Cluster {
    /// The `strata` command line with `args` against the gateway, as
    /// admin; its output. Panics, with what it printed, if it fails.
    pub fn strata(&self, args: &[&str]) -> String {
        let out = std::process::Command::new(crate::workspace_binary("strata").unwrap())
            .args([
                "--endpoint",
                &self.gateway_url(),
                "--token",
                self.admin_token(),
            ])
            .args(args)
            .env_remove("STRATA_ENDPOINT")
            .output()
            .unwrap();
        assert!(out.status.success(), "strata {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `GET /v1/cluster/status` through the gateway.
    pub async fn status_json(&self) -> Value {
        self.http()
            .get(format!("{}/v1/cluster/status", self.gateway_url()))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}
