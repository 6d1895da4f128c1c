pytest_plugins = ["tests.kubeapi.fixtures", "tests.golden_plugin"]
