fn main() -> std::process::ExitCode {
    diskalign::cli::main()
}
