"""Starting, guarding, limiting and ending programs: nothing here knows of reviewers or rounds."""
