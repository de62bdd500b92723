//! Documents are parsed by a confined child of Spear's own binary (`spear __extract`): a test
//! that extracts through the library names the binary cargo built, as `main` names itself.

pub fn use_spear_binary() {
    spear::tools::documents::set_extractor(env!("CARGO_BIN_EXE_spear").into());
}
