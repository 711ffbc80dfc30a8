//! One AWS configuration per process. It is loaded on first use (a cold start that never
//! touches AWS never pays for it), every client is built from it, and the time it took is
//! logged once, so its share of a cold start can be seen.

use std::time::Instant;

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

static SDK_CONFIG: OnceCell<SdkConfig> = OnceCell::const_new();

/// The standard AWS environment: region, credentials, and `AWS_ENDPOINT_URL[_<SERVICE>]`,
/// which is how tests point every client at a loopback emulator.
pub async fn sdk_config() -> &'static SdkConfig {
    SDK_CONFIG
        .get_or_init(|| async {
            let started = Instant::now();
            let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            tracing::info!(
                aws_config_us = started.elapsed().as_micros() as u64,
                "AWS configuration loaded"
            );
            config
        })
        .await
}
