//! What a Linux executable needs to start in an image that holds nothing else: its program
//! interpreter (the dynamic loader, `PT_INTERP`) and the shared libraries it and they name
//! (`DT_NEEDED`), found where the loader would look on this machine. A static executable
//! needs nothing. Only 64-bit little-endian ELF is read (x86_64, aarch64).
use super::error::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// A file of this machine to put into the image, and where.
#[derive(Debug, PartialEq, Eq)]
pub struct RuntimeFile {
    pub host: PathBuf,
    pub in_image: String,
}

/// The loader and libraries `binary` (whose bytes are `data`) needs, in the order found.
/// An error's message names the library or directory at fault, not `binary`: the caller
/// says which executable it was.
///
/// The loader goes at the path the executable names; the libraries go into the directory the
/// loader really lives in on this machine (`/usr/lib/x86_64-linux-gnu` on Debian, `/usr/lib64`
/// on Fedora), which its built-in search path covers, so that no `ld.so.cache` or
/// `LD_LIBRARY_PATH` is needed in the image.
pub fn runtime_files(binary: &Path, data: &[u8]) -> Result<Vec<RuntimeFile>, Error> {
    let invalid = |why: &str| Error::new(ErrorKind::InvalidContent, why);
    let elf = Elf::parse(data).map_err(invalid)?;
    let Some(interp) = elf.interp.clone() else {
        // Static: the kernel starts it without help.
        return Ok(Vec::new());
    };
    let loader = std::fs::canonicalize(&interp).map_err(|e| {
        invalid(&format!(
            "its program interpreter {interp} cannot be found on this machine: {e}"
        ))
    })?;
    let loader_dir = loader.parent().unwrap_or(Path::new("/")).to_path_buf();
    let origin = binary.parent().unwrap_or(Path::new("/"));
    let mut dirs: Vec<PathBuf> = elf
        .runpath
        .iter()
        .map(|d| PathBuf::from(d.replace("$ORIGIN", &origin.to_string_lossy())))
        .collect();
    dirs.push(loader_dir.clone());
    dirs.extend(["/lib64", "/usr/lib64", "/lib", "/usr/lib"].map(PathBuf::from));

    let mut files = vec![RuntimeFile {
        host: loader,
        in_image: interp,
    }];
    let mut pending: Vec<(String, PathBuf)> = elf
        .needed
        .into_iter()
        .map(|n| (n, binary.to_path_buf()))
        .collect();
    let mut seen: Vec<String> = Vec::new();
    while let Some((name, wanted_by)) = pending.pop() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let found = dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file());
        let Some(host) = found else {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            return Err(invalid(&format!(
                "{name} (needed by {}) is not in {}",
                wanted_by.display(),
                dirs.join(", ")
            )));
        };
        let lib = std::fs::read(&host).map_err(|e| invalid(&format!("{}: {e}", host.display())))?;
        let lib_elf =
            Elf::parse(&lib).map_err(|why| invalid(&format!("{}: {why}", host.display())))?;
        pending.extend(lib_elf.needed.into_iter().map(|n| (n, host.clone())));
        // The loader is also the library `ld-linux-x86-64.so.2` that libc names: it is in
        // the image already.
        if std::fs::canonicalize(&host).ok().as_ref() == Some(&files[0].host) {
            continue;
        }
        files.push(RuntimeFile {
            host,
            in_image: loader_dir.join(&name).to_string_lossy().into_owned(),
        });
    }
    Ok(files)
}

/// The parts of an ELF file that say what it needs at run time.
#[derive(Debug, Default)]
struct Elf {
    interp: Option<String>,
    needed: Vec<String>,
    runpath: Vec<String>,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;

/// One program header: type, file offset, virtual address, size in the file.
struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

impl Elf {
    fn parse(data: &[u8]) -> Result<Elf, &'static str> {
        const TRUNCATED: &str = "truncated ELF file";
        if data.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err("not an ELF executable");
        }
        if data.get(4..6) != Some([2u8, 1].as_slice()) {
            return Err("not a 64-bit little-endian ELF file");
        }
        let phoff = u64_at(data, 0x20).ok_or(TRUNCATED)?;
        let phentsize = u16_at(data, 0x36).ok_or(TRUNCATED)? as u64;
        let phnum = u16_at(data, 0x38).ok_or(TRUNCATED)? as u64;
        let segments = (0..phnum)
            .map(|i| {
                let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
                Some(Segment {
                    kind: u32_at(data, at)?,
                    offset: u64_at(data, at.checked_add(8)?)?,
                    vaddr: u64_at(data, at.checked_add(16)?)?,
                    filesz: u64_at(data, at.checked_add(32)?)?,
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(TRUNCATED)?;
        let bytes_of = |s: &Segment| -> Option<&[u8]> {
            let start = usize::try_from(s.offset).ok()?;
            data.get(start..start.checked_add(usize::try_from(s.filesz).ok()?)?)
        };
        let mut elf = Elf::default();
        if let Some(s) = segments.iter().find(|s| s.kind == PT_INTERP) {
            let raw = bytes_of(s).ok_or(TRUNCATED)?;
            let path = raw.split(|&b| b == 0).next().unwrap_or_default();
            let path = std::str::from_utf8(path).map_err(|_| "program interpreter not UTF-8")?;
            elf.interp = Some(path.to_owned());
        }
        let Some(dynamic) = segments.iter().find(|s| s.kind == PT_DYNAMIC) else {
            return Ok(elf);
        };
        let dynamic = bytes_of(dynamic).ok_or(TRUNCATED)?;
        let entries: Vec<(u64, u64)> = dynamic
            .chunks_exact(16)
            .map(|e| (u64_at(e, 0).unwrap_or(0), u64_at(e, 8).unwrap_or(0)))
            .take_while(|&(tag, _)| tag != 0)
            .collect();
        let Some(&(_, strtab)) = entries.iter().find(|(tag, _)| *tag == DT_STRTAB) else {
            return Ok(elf);
        };
        // The string table is named by address: find the loaded segment that holds it.
        let strtab = segments
            .iter()
            .filter(|s| s.kind == PT_LOAD)
            .find(|s| strtab >= s.vaddr && strtab - s.vaddr < s.filesz)
            .and_then(|s| s.offset.checked_add(strtab - s.vaddr))
            .ok_or("the dynamic string table is outside the file")?;
        let string = |at: u64| -> Result<String, &'static str> {
            let start = strtab
                .checked_add(at)
                .and_then(|a| usize::try_from(a).ok())
                .ok_or(TRUNCATED)?;
            let rest = data.get(start..).ok_or(TRUNCATED)?;
            let end = rest.iter().position(|&b| b == 0).ok_or(TRUNCATED)?;
            String::from_utf8(rest[..end].to_vec()).map_err(|_| "a library name is not UTF-8")
        };
        for &(tag, value) in &entries {
            match tag {
                DT_NEEDED => elf.needed.push(string(value)?),
                DT_RPATH | DT_RUNPATH => elf
                    .runpath
                    .extend(string(value)?.split(':').map(str::to_owned)),
                _ => {}
            }
        }
        Ok(elf)
    }
}

fn u16_at(data: &[u8], at: u64) -> Option<u16> {
    let at = usize::try_from(at).ok()?;
    Some(u16::from_le_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(data: &[u8], at: u64) -> Option<u32> {
    let at = usize::try_from(at).ok()?;
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(data: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test program itself: dynamically linked to glibc, as any default Rust build on a
    /// glibc system is.
    #[test]
    fn a_dynamic_executable_needs_its_loader_and_libc() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let files = runtime_files(&exe, &data).unwrap();
        let elf = Elf::parse(&data).unwrap();
        let interp = elf.interp.unwrap();
        assert_eq!(files[0].in_image, interp);
        assert_eq!(files[0].host, std::fs::canonicalize(&interp).unwrap());
        let loader_dir = files[0].host.parent().unwrap();
        let libc = files
            .iter()
            .find(|f| f.in_image.ends_with("/libc.so.6"))
            .unwrap();
        assert_eq!(Path::new(&libc.in_image), loader_dir.join("libc.so.6"));
        // The loader appears once, at the path the executable names.
        let loaders = files.iter().filter(|f| f.host == files[0].host).count();
        assert_eq!(loaders, 1);
    }

    #[test]
    fn files_that_are_not_elf_or_are_cut_short_are_refused() {
        let path = Path::new("/some/file");
        let err = |data: &[u8]| runtime_files(path, data).unwrap_err().message;
        assert_eq!(err(b"#!/bin/sh\n"), "not an ELF executable");
        assert_eq!(
            err(b"\x7fELF\x01\x01"),
            "not a 64-bit little-endian ELF file"
        );
        assert_eq!(err(b"\x7fELF\x02\x01\x01"), "truncated ELF file");
        // A program header table that points past the end of the file.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(err(&exe[..0x100]), "truncated ELF file");
    }

    /// A static executable (no PT_INTERP) needs nothing: made from our own header with its
    /// interpreter and dynamic segments renamed away.
    #[test]
    fn a_static_executable_needs_nothing() {
        let mut exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let phoff = u64_at(&exe, 0x20).unwrap() as usize;
        let phentsize = u16_at(&exe, 0x36).unwrap() as usize;
        for i in 0..u16_at(&exe, 0x38).unwrap() as usize {
            let at = phoff + i * phentsize;
            let kind = u32_at(&exe, at as u64).unwrap();
            if kind == PT_INTERP || kind == PT_DYNAMIC {
                // PT_NULL: an unused entry.
                exe[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
            }
        }
        assert_eq!(runtime_files(Path::new("/bin/x"), &exe).unwrap(), []);
    }
}
