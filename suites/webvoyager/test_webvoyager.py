async def test_task(task, webvoyager_run):
    verdict = await webvoyager_run(task)
    assert verdict.success, verdict.reason
