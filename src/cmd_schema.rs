//! `reviewflow schema`.

use reviewflow_engine::emit::schemas;

use crate::cli::SchemaArgs;
use crate::output::{EXIT_OK, EXIT_UNUSABLE};

pub fn run(args: SchemaArgs) -> u8 {
    let all = schemas();
    match args.out {
        None => {
            let map: serde_json::Map<String, serde_json::Value> =
                all.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
            println!("{}", serde_json::to_string_pretty(&map).unwrap_or_default());
            EXIT_OK
        }
        Some(dir) => {
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("error: cannot create {}: {e}", dir.display());
                return EXIT_UNUSABLE;
            }
            for (name, schema) in all {
                let path = dir.join(name);
                let text = format!(
                    "{}\n",
                    serde_json::to_string_pretty(&schema).unwrap_or_default()
                );
                // Write beside, then rename: a reader never sees half a schema.
                let tmp = dir.join(format!(".{name}.tmp"));
                let written =
                    std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
                if let Err(e) = written {
                    eprintln!("error: cannot write {}: {e}", path.display());
                    return EXIT_UNUSABLE;
                }
                eprintln!("wrote {}", path.display());
            }
            EXIT_OK
        }
    }
}
