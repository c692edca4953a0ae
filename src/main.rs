fn main() {
    std::process::exit(olm_registry::cli::main());
}
