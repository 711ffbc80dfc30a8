//! The household and the simulated catalogue: who lives here, what each role may spend, and
//! what the merchants sell. Both are JSON files in `data/`, built into the binary as the
//! default and replaceable at start with `COUNTERSIGN_DATA=<dir>`. A file that does not parse
//! or breaks a rule below stops the server with an error naming the file and the problem.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

pub const HOUSEHOLD_FILE: &str = "household.json";
pub const CATALOGUE_FILE: &str = "catalogue.json";

const BUILT_IN_HOUSEHOLD: &str = include_str!("../../../data/household.json");
const BUILT_IN_CATALOGUE: &str = include_str!("../../../data/catalogue.json");

/// Identifiers (members, merchants, products, variants) are short and plain, because they
/// travel in tool arguments, attestations and spoken answers.
const ID_MAX: usize = 40;
/// Listing text is untrusted and shown to models; keep it bounded.
const LISTING_TEXT_MAX: usize = 1000;
/// No single price or limit above $100,000: a typo guard, not a policy.
const CENTS_MAX: u64 = 10_000_000;
/// Members of one household. It bounds how fast a household can write to its ledger (see
/// `service::ACTING_CALLS_PER_MEMBER`).
pub const MAX_MEMBERS: usize = 16;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Parent,
    Child,
    OlderRelative,
}

impl Role {
    /// How a spoken answer names the role.
    pub fn spoken(self) -> &'static str {
        match self {
            Role::Parent => "a parent",
            Role::Child => "a child",
            Role::OlderRelative => "an older relative",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Member {
    pub id: String,
    pub name: String,
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleRules {
    /// The most one order may total, in cents.
    pub per_order_limit_cents: u64,
    /// Every order by this role waits for a guardian.
    pub needs_guardian: bool,
}

/// The household's rules, as `data/household.json` states them and the resource
/// `countersign://household/rules` serves them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Household {
    pub household_id: String,
    pub name: String,
    pub currency: String,
    /// The IANA time zone the budget weeks are counted in, e.g. "America/New_York".
    #[serde(default = "utc")]
    pub time_zone: String,
    /// The day the weekly budget restarts, at midnight in `time_zone`: "monday" … "sunday".
    pub week_starts: String,
    pub members: Vec<Member>,
    /// Member ids who may approve or decline requests that need a guardian.
    pub guardians: Vec<String>,
    pub roles: BTreeMap<Role, RoleRules>,
    /// What all placed orders of one week may total, in cents.
    pub weekly_budget_cents: u64,
    /// Roles whose gift-card orders wait for a guardian.
    pub gift_cards_need_guardian_for: Vec<Role>,
    /// Merchant ids the household has bought from; any other merchant needs confirmation.
    pub known_merchants: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Merchant {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub id: String,
    pub label: String,
    pub unit_price_cents: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    pub id: String,
    pub title: String,
    /// A merchant id.
    pub merchant: String,
    /// `gift_card` triggers the gift-card rule.
    pub category: String,
    /// The listing's own text: untrusted, and sometimes written to steer an assistant.
    pub text: String,
    pub variants: Vec<Variant>,
}

impl Product {
    pub fn is_gift_card(&self) -> bool {
        self.category == "gift_card"
    }

    pub fn variant(&self, id: &str) -> Option<&Variant> {
        self.variants.iter().find(|variant| variant.id == id)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    pub note: String,
    pub merchants: Vec<Merchant>,
    pub products: Vec<Product>,
}

impl Catalogue {
    pub fn product(&self, id: &str) -> Option<&Product> {
        self.products.iter().find(|product| product.id == id)
    }

    pub fn merchant_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.merchants
            .iter()
            .find(|merchant| merchant.id == id)
            .map_or(id, |merchant| merchant.name.as_str())
    }
}

fn utc() -> String {
    "UTC".into()
}

/// When a household's budget weeks begin: midnight, local time, of one weekday in one time
/// zone. Weeks follow the zone's daylight-saving changes, so one may last 167 or 169 hours.
#[derive(Debug, Clone)]
pub struct Weeks {
    zone: jiff::tz::TimeZone,
    starts: jiff::civil::Weekday,
}

impl PartialEq for Weeks {
    fn eq(&self, other: &Self) -> bool {
        self.zone.iana_name() == other.zone.iana_name() && self.starts == other.starts
    }
}

impl Eq for Weeks {}

impl Default for Weeks {
    /// Midnight on Monday, UTC: the ISO week.
    fn default() -> Self {
        Self {
            zone: jiff::tz::TimeZone::UTC,
            starts: jiff::civil::Weekday::Monday,
        }
    }
}

impl Weeks {
    /// `zone` is an IANA name from the built-in time-zone database; `starts` a weekday name
    /// in English, in any case.
    pub fn new(zone: &str, starts: &str) -> Result<Self, String> {
        let starts = match starts.to_ascii_lowercase().as_str() {
            "monday" => jiff::civil::Weekday::Monday,
            "tuesday" => jiff::civil::Weekday::Tuesday,
            "wednesday" => jiff::civil::Weekday::Wednesday,
            "thursday" => jiff::civil::Weekday::Thursday,
            "friday" => jiff::civil::Weekday::Friday,
            "saturday" => jiff::civil::Weekday::Saturday,
            "sunday" => jiff::civil::Weekday::Sunday,
            _ => {
                return Err(format!(
                    "week_starts {starts:?} is not a weekday such as \"monday\""
                ));
            }
        };
        let zone = jiff::tz::db().get(zone).map_err(|_| {
            format!("time_zone {zone:?} is not an IANA time zone such as \"Europe/London\"")
        })?;
        Ok(Self { zone, starts })
    }

    /// When the budget week containing `now` began.
    pub fn start_of(&self, now: OffsetDateTime) -> OffsetDateTime {
        self.try_start_of(now).unwrap_or_else(|| {
            // Only instants at the very ends of the representable range get here.
            now.replace_time(time::Time::MIDNIGHT)
        })
    }

    fn try_start_of(&self, now: OffsetDateTime) -> Option<OffsetDateTime> {
        let instant = jiff::Timestamp::from_nanosecond(now.unix_timestamp_nanos()).ok()?;
        let today = instant.to_zoned_datetime(self.zone.clone()).date();
        let back = (today.weekday().to_monday_zero_offset() - self.starts.to_monday_zero_offset())
            .rem_euclid(7);
        let first_day = today.checked_sub(jiff::Span::new().days(back)).ok()?;
        // Midnight may not exist on a day whose clocks spring forward at 00:00; the start of
        // that day is then the first instant that does.
        let start = first_day
            .to_zoned_datetime(self.zone.clone())
            .ok()?
            .start_of_day()
            .ok()?;
        OffsetDateTime::from_unix_timestamp_nanos(start.timestamp().as_nanosecond()).ok()
    }
}

/// The household and catalogue, checked against each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HouseholdData {
    pub household: Household,
    pub catalogue: Catalogue,
    /// The household's budget weeks, from `time_zone` and `week_starts`.
    pub weeks: Weeks,
}

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{file} could not be read: {source}")]
    Unreadable {
        file: String,
        source: std::io::Error,
    },
    #[error("{file} is not valid: {reason}")]
    Invalid { file: String, reason: String },
}

impl HouseholdData {
    /// The files built into the binary (the project's `data/`).
    pub fn built_in() -> Result<Self, DataError> {
        Self::parse(BUILT_IN_HOUSEHOLD, BUILT_IN_CATALOGUE)
    }

    /// `household.json` and `catalogue.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| DataError::Unreadable {
                file: path.display().to_string(),
                source,
            })
        };
        Self::parse(&read(HOUSEHOLD_FILE)?, &read(CATALOGUE_FILE)?)
    }

    /// The data of household account `household_id`: its stored `policy` (checked when it was
    /// set, and checked again here) over the deployment's `catalogue`.
    pub fn for_account(
        policy: &serde_json::Value,
        household_id: &str,
        catalogue: &Catalogue,
    ) -> Result<Self, DataError> {
        let household = account_policy(policy, household_id, household_id, catalogue)
            .map_err(|reason| invalid("the household policy", reason))?;
        let weeks = Weeks::new(&household.time_zone, &household.week_starts)
            .map_err(|reason| invalid("the household policy", reason))?;
        Ok(Self {
            household,
            catalogue: catalogue.clone(),
            weeks,
        })
    }

    pub fn parse(household: &str, catalogue: &str) -> Result<Self, DataError> {
        let household: Household = serde_json::from_str(household)
            .map_err(|error| invalid(HOUSEHOLD_FILE, error.to_string()))?;
        let catalogue: Catalogue = serde_json::from_str(catalogue)
            .map_err(|error| invalid(CATALOGUE_FILE, error.to_string()))?;
        check_catalogue(&catalogue).map_err(|reason| invalid(CATALOGUE_FILE, reason))?;
        check_household(&household, &catalogue)
            .map_err(|reason| invalid(HOUSEHOLD_FILE, reason))?;
        let weeks = Weeks::new(&household.time_zone, &household.week_starts)
            .map_err(|reason| invalid(HOUSEHOLD_FILE, reason))?;
        Ok(Self {
            household,
            catalogue,
            weeks,
        })
    }

    /// These rules as the policy of another household account, `household_id` named `name`.
    pub fn policy_for(
        &self,
        household_id: &str,
        name: &str,
    ) -> serde_json::Result<serde_json::Value> {
        let mut household = self.household.clone();
        household.household_id = household_id.to_owned();
        household.name = name.to_owned();
        serde_json::to_value(household)
    }

    /// The household's id: the account id for a household account.
    pub fn id(&self) -> &str {
        &self.household.household_id
    }

    pub fn member(&self, id: &str) -> Option<&Member> {
        self.household.members.iter().find(|member| member.id == id)
    }

    pub fn is_guardian(&self, member_id: &str) -> bool {
        self.household.guardians.iter().any(|id| id == member_id)
    }

    /// The guardians other than `member_id`: those who may decide that member's requests.
    pub fn other_guardians<'a>(&'a self, member_id: &'a str) -> impl Iterator<Item = &'a str> {
        self.household
            .guardians
            .iter()
            .map(String::as_str)
            .filter(move |id| *id != member_id)
    }

    pub fn role_rules(&self, role: Role) -> &RoleRules {
        // Loading checked that every member's role has rules.
        &self.household.roles[&role]
    }

    pub fn is_known_merchant(&self, merchant_id: &str) -> bool {
        self.household
            .known_merchants
            .iter()
            .any(|id| id == merchant_id)
    }
}

/// Checks a policy for household account `household_id`: today's `household.json` shape,
/// checked the same way against `catalogue`. Its `household_id` may be left out and, if
/// present, must be `household_id`; its `name` may be left out, and is then `name_if_absent`.
/// Returns the policy with both filled in.
pub fn account_policy(
    policy: &serde_json::Value,
    household_id: &str,
    name_if_absent: &str,
    catalogue: &Catalogue,
) -> Result<Household, String> {
    let mut policy = policy.clone();
    let fields = policy
        .as_object_mut()
        .ok_or("a household policy is a JSON object, as household.json is")?;
    match fields.get("household_id") {
        None => {
            fields.insert("household_id".into(), household_id.into());
        }
        Some(serde_json::Value::String(id)) if id == household_id => {}
        Some(other) => {
            return Err(format!(
                "the policy's household_id {other} does not match household {household_id}; leave it out or make it match"
            ));
        }
    }
    fields
        .entry("name")
        .or_insert_with(|| name_if_absent.into());
    let household: Household = serde_json::from_value(policy).map_err(|error| error.to_string())?;
    check_household(&household, catalogue)?;
    Weeks::new(&household.time_zone, &household.week_starts)?;
    Ok(household)
}

/// The built-in demo household's policy, as a starting point for an account's.
pub fn built_in_policy() -> serde_json::Value {
    serde_json::from_str(BUILT_IN_HOUSEHOLD).expect("the built-in household is JSON")
}

fn invalid(file: &str, reason: String) -> DataError {
    DataError::Invalid {
        file: file.to_owned(),
        reason,
    }
}

fn check_id(what: &str, id: &str) -> Result<(), String> {
    let plain = id
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if id.is_empty() || id.len() > ID_MAX || !plain {
        return Err(format!(
            "{what} id {id:?} must be 1 to {ID_MAX} lower-case letters, digits or '-'"
        ));
    }
    Ok(())
}

fn check_unique<'a>(what: &str, ids: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    let mut seen = HashSet::new();
    for id in ids {
        check_id(what, id)?;
        if !seen.insert(id) {
            return Err(format!("{what} id {id:?} appears twice"));
        }
    }
    Ok(())
}

/// A limit or a budget: 0 stops every order (a household made by sign-up starts so).
fn check_limit_cents(what: &str, cents: u64) -> Result<(), String> {
    if cents > CENTS_MAX {
        return Err(format!(
            "{what} must be at most {CENTS_MAX} cents (0 lets nothing be bought)"
        ));
    }
    Ok(())
}

fn check_cents(what: &str, cents: u64) -> Result<(), String> {
    if cents == 0 || cents > CENTS_MAX {
        return Err(format!("{what} must be between 1 and {CENTS_MAX} cents"));
    }
    Ok(())
}

fn check_catalogue(catalogue: &Catalogue) -> Result<(), String> {
    check_unique(
        "merchant",
        catalogue.merchants.iter().map(|m| m.id.as_str()),
    )?;
    check_unique("product", catalogue.products.iter().map(|p| p.id.as_str()))?;
    for product in &catalogue.products {
        if !catalogue.merchants.iter().any(|m| m.id == product.merchant) {
            return Err(format!(
                "product {:?} names merchant {:?}, which is not in the merchant list",
                product.id, product.merchant
            ));
        }
        if product.title.trim().is_empty() {
            return Err(format!("product {:?} has no title", product.id));
        }
        if product.text.chars().count() > LISTING_TEXT_MAX {
            return Err(format!(
                "product {:?} has listing text over {LISTING_TEXT_MAX} characters",
                product.id
            ));
        }
        if product.variants.is_empty() {
            return Err(format!("product {:?} has no variants", product.id));
        }
        check_unique("variant", product.variants.iter().map(|v| v.id.as_str()))?;
        for variant in &product.variants {
            check_cents(
                &format!("the price of {}/{}", product.id, variant.id),
                variant.unit_price_cents,
            )?;
        }
    }
    Ok(())
}

fn check_household(household: &Household, catalogue: &Catalogue) -> Result<(), String> {
    check_id("household", &household.household_id)?;
    if household.members.len() > MAX_MEMBERS {
        return Err(format!(
            "a household has at most {MAX_MEMBERS} members; this one lists {}",
            household.members.len()
        ));
    }
    check_unique("member", household.members.iter().map(|m| m.id.as_str()))?;
    for member in &household.members {
        if !household.roles.contains_key(&member.role) {
            return Err(format!(
                "member {:?} has role {:?}, which has no rules under \"roles\"",
                member.id, member.role
            ));
        }
    }
    for (role, rules) in &household.roles {
        check_limit_cents(
            &format!("the per-order limit of {role:?}"),
            rules.per_order_limit_cents,
        )?;
    }
    check_limit_cents("the weekly budget", household.weekly_budget_cents)?;
    if household.guardians.is_empty() {
        return Err("at least one guardian is needed".into());
    }
    for guardian in &household.guardians {
        match household.members.iter().find(|m| &m.id == guardian) {
            None => return Err(format!("guardian {guardian:?} is not a member")),
            Some(member) if member.role == Role::Child => {
                return Err(format!("guardian {guardian:?} is a child"));
            }
            Some(_) => {}
        }
    }
    for merchant in &household.known_merchants {
        if !catalogue.merchants.iter().any(|m| &m.id == merchant) {
            return Err(format!(
                "known merchant {merchant:?} is not a merchant in {CATALOGUE_FILE}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(
        file: &str,
        edit: impl FnOnce(&mut serde_json::Value),
    ) -> Result<HouseholdData, DataError> {
        let mut household: serde_json::Value = serde_json::from_str(BUILT_IN_HOUSEHOLD).unwrap();
        let mut catalogue: serde_json::Value = serde_json::from_str(BUILT_IN_CATALOGUE).unwrap();
        edit(if file == HOUSEHOLD_FILE {
            &mut household
        } else {
            &mut catalogue
        });
        HouseholdData::parse(&household.to_string(), &catalogue.to_string())
    }

    fn problem(file: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let error = edited(file, edit).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{file} is not valid")),
            "{error}"
        );
        error
    }

    #[test]
    fn weeks_follow_the_households_zone_across_daylight_saving() {
        use time::macros::datetime;
        let weeks = Weeks::new("America/New_York", "Sunday").unwrap();
        // Clocks spring forward on Sunday 14 March 2027: that week is 167 hours long.
        assert_eq!(
            weeks.start_of(datetime!(2027-03-14 05:00 UTC)),
            datetime!(2027-03-14 05:00 UTC),
            "midnight EST"
        );
        assert_eq!(
            weeks.start_of(datetime!(2027-03-21 03:59:59 UTC)),
            datetime!(2027-03-14 05:00 UTC)
        );
        assert_eq!(
            weeks.start_of(datetime!(2027-03-21 04:00 UTC)),
            datetime!(2027-03-21 04:00 UTC),
            "midnight EDT"
        );
        // And fall back on Sunday 1 November 2026: that week is 169 hours long.
        assert_eq!(
            weeks.start_of(datetime!(2026-11-08 04:59:59 UTC)),
            datetime!(2026-11-01 04:00 UTC)
        );
        assert_eq!(
            weeks.start_of(datetime!(2026-11-08 05:00 UTC)),
            datetime!(2026-11-08 05:00 UTC)
        );
        // Monday 00:00 UTC is still Sunday afternoon there: the same week.
        assert_eq!(
            weeks.start_of(datetime!(2026-11-30 00:00 UTC)),
            datetime!(2026-11-29 05:00 UTC)
        );
    }

    #[test]
    fn a_time_zone_or_weekday_that_does_not_exist_is_refused() {
        let zone = problem(HOUSEHOLD_FILE, |h| {
            h["time_zone"] = "Mars/Olympus_Mons".into()
        });
        assert!(zone.contains("not an IANA time zone"), "{zone}");
        let day = problem(HOUSEHOLD_FILE, |h| {
            h["week_starts"] = "Monday 00:00 UTC".into()
        });
        assert!(day.contains("is not a weekday"), "{day}");
        let data = edited(HOUSEHOLD_FILE, |h| {
            h.as_object_mut().unwrap().remove("time_zone");
        })
        .unwrap();
        assert_eq!(
            data.weeks,
            Weeks::new("UTC", "monday").unwrap(),
            "UTC by default"
        );
        assert_eq!(
            Weeks::default(),
            data.weeks,
            "the ledger's default is the same week"
        );
    }

    #[test]
    fn a_household_holds_sixteen_members_and_not_seventeen() {
        let with_members = |count: usize| {
            edited(HOUSEHOLD_FILE, |h| {
                let members = h["members"].as_array_mut().unwrap();
                for n in members.len()..count {
                    members.push(serde_json::json!({"id": format!("m{n}"), "name": format!("M{n}"), "role": "parent"}));
                }
            })
        };
        assert!(with_members(MAX_MEMBERS).is_ok());
        let error = with_members(MAX_MEMBERS + 1).unwrap_err().to_string();
        assert!(error.contains("at most 16 members"), "{error}");
    }

    #[test]
    fn the_built_in_data_loads() {
        let data = HouseholdData::built_in().unwrap();
        assert!(data.is_guardian("dana"));
        assert!(!data.is_guardian("mia"));
        assert_eq!(data.member("rose").unwrap().role, Role::OlderRelative);
        assert!(data.catalogue.product("gift-card").unwrap().is_gift_card());
    }

    #[test]
    fn the_project_files_are_the_built_in_files() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
        assert_eq!(
            HouseholdData::load(&dir).unwrap(),
            HouseholdData::built_in().unwrap()
        );
    }

    #[test]
    fn malformed_files_are_named_with_the_problem() {
        let error = HouseholdData::parse("{", BUILT_IN_CATALOGUE)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("household.json is not valid"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| {
            h["members"][2]["role"] = "toddler".into()
        });
        assert!(error.contains("toddler"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| h["budget"] = 5.into());
        assert!(error.contains("unknown field `budget`"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| {
            h["guardians"] = serde_json::json!(["mia"])
        });
        assert!(error.contains("is a child"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| {
            h["guardians"] = serde_json::json!(["nobody"])
        });
        assert!(error.contains("not a member"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| h["known_merchants"][0] = "acme".into());
        assert!(error.contains("\"acme\" is not a merchant"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| {
            h["weekly_budget_cents"] = (CENTS_MAX + 1).into()
        });
        assert!(error.contains("weekly budget"), "{error}");
        // A budget or a limit of nothing is a household that buys nothing, not a typo.
        for zero in ["weekly_budget_cents", "per_order_limit_cents"] {
            let edited = edited(HOUSEHOLD_FILE, |h| {
                if zero == "weekly_budget_cents" {
                    h[zero] = 0.into();
                } else {
                    h["roles"]["parent"][zero] = 0.into();
                }
            });
            assert!(edited.is_ok(), "{zero}: {edited:?}");
        }
        let error = problem(HOUSEHOLD_FILE, |h| {
            h["roles"].as_object_mut().unwrap().remove("child");
        });
        assert!(error.contains("has no rules"), "{error}");
        let error = problem(HOUSEHOLD_FILE, |h| h["members"][1]["id"] = "dana".into());
        assert!(error.contains("appears twice"), "{error}");
    }

    #[test]
    fn catalogue_rules_are_checked() {
        let error = problem(CATALOGUE_FILE, |c| {
            c["products"][0]["merchant"] = "nowhere".into()
        });
        assert!(error.contains("not in the merchant list"), "{error}");
        let error = problem(CATALOGUE_FILE, |c| {
            c["products"][0]["variants"][0]["unit_price_cents"] = 0.into()
        });
        assert!(error.contains("price of aa-batteries/4-pack"), "{error}");
        let error = problem(CATALOGUE_FILE, |c| {
            c["products"][0]["variants"][0]["unit_price_cents"] = (-5).into()
        });
        assert!(
            error.contains("unit_price_cents") || error.contains("invalid value"),
            "{error}"
        );
        let error = problem(CATALOGUE_FILE, |c| {
            c["products"][0]["id"] = "AA Batteries".into()
        });
        assert!(error.contains("lower-case"), "{error}");
    }

    #[test]
    fn listing_text_is_bounded_at_1000_characters() {
        let at_limit = edited(CATALOGUE_FILE, |c| {
            c["products"][0]["text"] = "a".repeat(LISTING_TEXT_MAX).into()
        });
        assert!(at_limit.is_ok());
        let error = problem(CATALOGUE_FILE, |c| {
            c["products"][0]["text"] = "a".repeat(LISTING_TEXT_MAX + 1).into()
        });
        assert!(error.contains("over 1000"), "{error}");
    }
}
