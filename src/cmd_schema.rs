//! `reviewflow schema`.

use reviewflow_engine::atomic::atomic_write_beneath;
use reviewflow_engine::beneath::Folder;
use reviewflow_engine::emit::schemas;
use reviewflow_engine::report::terminal_text;

use crate::cli::SchemaArgs;
use crate::output::{EXIT_OK, EXIT_UNUSABLE, errln, print_stdout};

pub fn run(args: SchemaArgs) -> u8 {
    let mut all = schemas();
    // The files the forge writes are the standard library's.
    all.extend(reviewflow_stdlib::forge::formats::schemas());
    match args.out {
        None => {
            let map: serde_json::Map<String, serde_json::Value> =
                all.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
            print_stdout(&format!(
                "{}\n",
                serde_json::to_string_pretty(&map).unwrap_or_default()
            ));
            EXIT_OK
        }
        Some(dir) => {
            let shown = terminal_text(&dir.display().to_string());
            // The folder a person named: created one component at a time, no link followed
            // below the working folder (the reader's rule for named paths).
            let folder = Folder::named(&dir).and_then(|(base, rel)| base.create(&rel, 0o777));
            let folder = match folder {
                Ok(folder) => folder,
                Err(e) => {
                    errln!(
                        "error: cannot create {shown}: {}",
                        terminal_text(&e.to_string())
                    );
                    return EXIT_UNUSABLE;
                }
            };
            for (name, schema) in all {
                let text = format!(
                    "{}\n",
                    serde_json::to_string_pretty(&schema).unwrap_or_default()
                );
                // A reader never sees half a schema; a link or a FIFO in its place is refused.
                if let Err(e) =
                    atomic_write_beneath(&folder, std::ffi::OsStr::new(name), text.as_bytes())
                {
                    errln!("error: {}", terminal_text(&e.to_string()));
                    return EXIT_UNUSABLE;
                }
                errln!(
                    "wrote {}",
                    terminal_text(&dir.join(name).display().to_string())
                );
            }
            EXIT_OK
        }
    }
}
