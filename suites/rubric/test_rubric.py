async def test_task(task, run_task):
    verdict = await run_task(task)
    assert verdict.success, verdict.reason
