//! Who is calling, as the HTTP layer established it: the hashed subject a verified bearer
//! names, and what the device attested about the person speaking. Toolsets receive it and
//! key all their data by it.

use super::attestation::{AttestationRefusal, HostClaim};

/// Who is calling, as far as a toolset needs to know: the SHA-256 of the verified subject,
/// which toolsets key all data by (so no argument can reach another credential's data), and
/// what the device attested about the person speaking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub scope: String,
    pub host: HostClaim,
}

impl Caller {
    /// A caller whose request carried no device attestation.
    pub fn unattested(scope: impl Into<String>) -> Self {
        Self {
            scope: scope.into(),
            host: HostClaim::Refused(AttestationRefusal::Missing),
        }
    }
}
