//! One AWS configuration per process. It is loaded on first use (a cold start that never
//! touches AWS never pays for it), every client is built from it, and the time it took is
//! logged once, so its share of a cold start can be seen.

use std::time::Instant;

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

/// The region used when the environment names none.
pub const DEFAULT_REGION: &str = "us-east-1";

static SDK_CONFIG: OnceCell<SdkConfig> = OnceCell::const_new();

/// The standard AWS environment: region, credentials, and `AWS_ENDPOINT_URL[_<SERVICE>]`,
/// which is how tests point every client at a loopback emulator.
pub async fn sdk_config() -> &'static SdkConfig {
    SDK_CONFIG
        .get_or_init(|| async {
            let started = Instant::now();
            // Lambda always sets a region; a laptop often has none, and then Polly and
            // Bedrock are asked in us-east-1 (where both run) instead of failing.
            let region = aws_config::meta::region::RegionProviderChain::default_provider()
                .or_else(aws_config::Region::new(DEFAULT_REGION));
            let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .region(region)
                .load()
                .await;
            tracing::info!(
                aws_config_us = started.elapsed().as_micros() as u64,
                "AWS configuration loaded"
            );
            config
        })
        .await
}
