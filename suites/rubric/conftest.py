"""Rubric tasks on the offline sites: each asks for several facts at once and is judged fact by fact by a model
judge under the `rubric` protocol (`--rubric-judge PROFILE`); the oracle acts unless a policy is given."""

from pathlib import Path

import pytest

from fixtures.sites.environment import offline_site_map, offline_sites, webeval_environment  # noqa: F401
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging, with_profile
from webeval.outcomes.record import JudgeError
from webeval.plugin import suite
from webeval.tasks import population_of, read_jsonl

RUBRIC_DIR = Path(__file__).parents[2] / "fixtures" / "tasks" / "rubric"
FILES = sorted(RUBRIC_DIR.glob("*.jsonl"))
TASKS = [task for path in FILES for task in read_jsonl(path)]
POPULATION = population_of("rubric", TASKS, FILES)
JUDGE = pytest.StashKey[JudgeConfig]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("rubric", "webeval: the rubric suite").addoption(
        "--rubric-judge", default=None, metavar="PROFILE",
        help="the judge profile (a name or a .toml / .json path) that judges the rubric tasks")


def pytest_configure(config: pytest.Config) -> None:
    if config.option.policy is None:
        config.option.policy = "oracle"
    if config.option.help or not config.option.rubric_judge:
        return
    try:
        config.stash[JUDGE] = with_profile(JudgeConfig(protocol="rubric", profile=config.option.rubric_judge,
                                                       cache=True), Path(config.rootpath))
    except JudgeConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    suite.parametrize(metafunc, POPULATION, TASKS)


@pytest.fixture(scope="session")
async def rubric_judging(pytestconfig: pytest.Config):
    config = pytestconfig.stash.get(JUDGE, None)
    judging = Judging(config) if config is not None else None
    yield judging
    if judging is not None:
        await judging.close()


@pytest.fixture
def webeval_judge(rubric_judging):
    async def judge(task, evidence):
        if rubric_judging is None:
            raise JudgeError("no judge: pass --rubric-judge PROFILE", kind="config")
        return await rubric_judging.judge(task, evidence)

    return judge
