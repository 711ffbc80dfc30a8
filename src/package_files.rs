//! `hearth package-files DIR` (hidden): what the packages install beside the binary, generated
//! from the binary's own definitions so that they cannot drift from it: a man page for
//! `hearth` and one for each command (`hearth-serve.1`, `hearth-admin.1`, …, clap_mangen),
//! bash, zsh and fish completions (clap_complete), and `hearth.env`, every setting commented.

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

pub fn write(dir: &Path) -> anyhow::Result<()> {
    let man = dir.join("man");
    let completions = dir.join("completions");
    for folder in [&man, &completions] {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("creating {}", folder.display()))?;
    }
    let mut command = crate::cli::Cli::command();
    command.build();
    write_page(&man, "hearth", &command)?;
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        let name = format!("hearth-{}", sub.get_name());
        // The page's title and usage name the whole command, as `man hearth-admin` is read.
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("hearth {}", sub.get_name()));
        write_page(&man, &name, &page)?;
    }
    for (shell, file) in [
        (clap_complete::Shell::Bash, "hearth.bash"),
        (clap_complete::Shell::Zsh, "_hearth"),
        (clap_complete::Shell::Fish, "hearth.fish"),
    ] {
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut command, "hearth", &mut text);
        std::fs::write(completions.join(file), text)?;
    }
    std::fs::write(
        dir.join("hearth.env"),
        hearth_core::config::reference::env_file(),
    )?;
    Ok(())
}

fn write_page(man: &Path, name: &str, command: &clap::Command) -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .title(name.to_uppercase())
        .section("1")
        .source(format!("hearth {}", env!("CARGO_PKG_VERSION")))
        .manual("Hearth")
        .render(&mut page)?;
    let path = man.join(format!("{name}.1"));
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))
}
