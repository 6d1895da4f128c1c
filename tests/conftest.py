import pytest

pytest_plugins = ["tests.kubeapi.fixtures", "tests.golden_plugin"]


@pytest.fixture(autouse=True)
def _state_home(tmp_path_factory, monkeypatch):
    """tau's state folder (where it keeps the logs of the attempts it deletes) in a temp dir:
    a test that cancels or retries a run never writes into the real ~/.local/state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
