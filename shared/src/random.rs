//! Bytes from the operating system's random source, for everything that must be unguessable:
//! household ids, device keys, link codes, authorization codes and refresh tokens.

use rand::TryRng;

/// The OS random source failed; nothing secret may be made from a weaker one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the OS random source failed")]
pub struct RandomFailed;

/// `N` bytes from the operating system's random source.
pub fn os_bytes<const N: usize>() -> Result<[u8; N], RandomFailed> {
    let mut bytes = [0u8; N];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|_| RandomFailed)?;
    Ok(bytes)
}
