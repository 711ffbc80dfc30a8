//! Money is integer cents everywhere; this is how it is written for people.

/// `1299` → `$12.99`.
pub fn dollars(cents: u64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cents_are_written_as_dollars() {
        assert_eq!(super::dollars(0), "$0.00");
        assert_eq!(super::dollars(5), "$0.05");
        assert_eq!(super::dollars(1299), "$12.99");
        assert_eq!(super::dollars(40_000), "$400.00");
    }
}
