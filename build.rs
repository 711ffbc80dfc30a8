//! What `hearth --version` reports about the build: the commit, whether the tree had changes
//! the commit does not hold, and the commit's date. Outside a Git checkout (a source tarball)
//! the commit is `unknown`. The date is the commit's, or `SOURCE_DATE_EPOCH` when set, and
//! never the clock's, so a rebuild of the same commit is the same binary.
//!
//! The script reruns only when HEAD moves (or `SOURCE_DATE_EPOCH` changes): a rerun rebuilds
//! and relinks the binary, which with fat LTO takes minutes. So the dirty flag says whether the
//! tree differed from HEAD when the script last ran, not at every later build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // A tarball unpacked inside some other checkout must not report that checkout's commit.
    let own_checkout = git(&["rev-parse", "--show-toplevel"])
        .and_then(|top| std::fs::canonicalize(top).ok())
        .zip(std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).ok())
        .is_some_and(|(top, here)| top == here);
    if own_checkout {
        for path in head_files() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let commit = own_checkout
        .then(|| git(&["rev-parse", "HEAD"]))
        .flatten()
        .filter(|hash| hash.len() == 40);
    let dirty = match commit {
        Some(_) => git(&["status", "--porcelain", "--untracked-files=no"])
            .map(|changes| if changes.is_empty() { "no" } else { "yes" }),
        None => None,
    };
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .or_else(|| {
            commit
                .as_ref()
                .and_then(|_| git(&["log", "-1", "--format=%ct"]))
        })
        .and_then(|seconds| seconds.trim().parse::<i64>().ok());
    println!(
        "cargo:rustc-env=HEARTH_BUILD_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=HEARTH_BUILD_DIRTY={}",
        dirty.unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=HEARTH_BUILD_DATE={}",
        epoch.map_or_else(|| "unknown".to_owned(), civil_date)
    );
}

/// The files whose change means HEAD moved: `HEAD`, the branch it names (loose or packed),
/// and HEAD's reflog, which every commit and checkout appends to (a branch that lived only in
/// `packed-refs` gets a loose file on its next commit, which the reflog catches). Paths come
/// from `git rev-parse --git-path`, which knows a worktree's layout.
fn head_files() -> Vec<PathBuf> {
    let path = |name: &str| git(&["rev-parse", "--git-path", name]).map(PathBuf::from);
    let mut files: Vec<PathBuf> = ["HEAD", "packed-refs", "logs/HEAD"]
        .into_iter()
        .filter_map(path)
        .collect();
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|name| path(&name)) {
        files.push(reference);
    }
    files
        .into_iter()
        .filter(|path| Path::new(path).exists())
        .map(|path| std::fs::canonicalize(&path).unwrap_or(path))
        .collect()
}

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `seconds` since the Unix epoch as a UTC date, YYYY-MM-DD (Howard Hinnant's days-to-civil
/// algorithm: a build script has no date library, and adding one for a line is not worth it).
fn civil_date(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
