"""A round's read-only copies of the reviewed commits (`build.build_workspace` is the one entry point)."""
